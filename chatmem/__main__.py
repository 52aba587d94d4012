"""`python -m chatmem` and the `chatmem` command.

Importing the command line takes most of a second: a Ctrl-C meanwhile (a person changing
their mind, or pressing it at every stage) printed a traceback through typer's imports.
It is said as any other interrupt is (`interrupted`, exit 130).
"""

import sys


def main() -> None:
    try:
        from chatmem.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)  # ExitCode.INTERRUPTED (chatmem.errors is not imported yet)
    run()


if __name__ == "__main__":
    main()
