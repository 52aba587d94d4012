"""The chat REPL, in layers that point one way:

    loop.py       reads lines (prompt-toolkit on a terminal, plain lines from a pipe)
                  and dispatches them: a turn, or a slash command from the table
    commands/     the slash commands, one module per group; each registers itself
                  in the table on import
    table.py      the command table (name → usage, help, function) and QuitRepl
    chat.py       the state a command acts on: the engine, the consoles, one turn
    keys.py       keys pressed while a turn runs: Ctrl-D, and typing ahead

`loop` imports `commands`, which import `table` and `chat`; nothing imports
upwards. This module imports nothing, so importing a command module never
pulls in the loop.
"""
