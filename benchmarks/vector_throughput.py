"""Messages embedded per second by recall's vector path (own + context vector per message).

Times `embed_pending` (what the backlog and `chatmem index` run) with the local
embedder on the recall benchmark's conversation, one thread, so two versions of
chatmem can be compared side by side in one command:

    for v in /path/to/old /path/to/new; do
        PYTHONPATH=$v python benchmarks/vector_throughput.py; done

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import recall_data

from chatmem.embeddings.local import LocalEmbedder
from chatmem.store import PendingText

try:
    from chatmem.memory.vector_rows import embed_pending
except ImportError:  # chatmem before vector_rows.py
    try:
        from chatmem.memory.vector_backlog import embed_pending  # type: ignore[no-redef]
    except ImportError:  # chatmem before the vector backlog
        from chatmem.memory.recall_sources import embed_pending  # type: ignore[no-redef]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=256)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    texts = [x["content"] for x in recall_data.generate(args.seed) if x.get("role")]
    texts = texts[: args.messages]
    pending = [PendingText(i + 1, text, texts[i - 1] if i else None)
               for i, text in enumerate(texts)]
    embedder = LocalEmbedder(threads=1)
    embedder.embed(["warm up"])  # the model loads once, outside the timing
    started = time.perf_counter()
    embed_pending(embedder, pending)
    seconds = time.perf_counter() - started
    print(f"{len(pending)} messages in {seconds:.1f} s: {len(pending) / seconds:.1f} messages/s"
          f" ({Path(sys.modules['chatmem'].__file__ or '').parent.parent})")


if __name__ == "__main__":
    main()
