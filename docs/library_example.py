"""chatmem from a program of your own: one conversation's turns, and what memory sent.

    python docs/library_example.py [HISTORY_FILE]

The README's "From Python" section runs it (docs/readme_examples.py keeps its output).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from chatmem.app import Workspace
from chatmem.app.conversations import open_conversation
from chatmem.config.settings import Settings

history = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "bot.db"
settings = Settings(provider="scripted", db=str(history))

# One Workspace per thread: it opens the history, the models and the strategies once.
with Workspace(settings) as workspace:
    spec = workspace.registries.strategies.parse("window", {"k": 1})
    # The engine is finished on leaving the block: what it embedded is stored then.
    with open_conversation(workspace, "channel-42", strategy=spec) as engine:
        for said in ["My cat is called 小花.", "I live in Porto.", "What is my cat called?"]:
            result = engine.run_turn(said)
            parts = ", ".join(f"{part.kind} {part.tokens}"
                              for part in result.context.parts)
            print(f"turn {result.record.number}: {result.reply!r}")
            print(f"  sent {result.context.tokens} tokens ({parts})")
