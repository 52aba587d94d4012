"""What a `retrieval` context at a probe spends its tokens on, on the development set.

Runs `chatmem eval DIR --probes-only --jobs 1` in this process (vectors from the user's
cache, as `chatmem eval` keeps them) and reads each probe's context as it is scored: the
eval itself keeps only its token count. Prints, per budget, the mean per context of each
part's tokens and messages, and of the recalled part: its chat-format overhead (what each
message costs beyond its text: the 3 tokens of framing and its role), the runs of
consecutive messages it holds, the day lines sent above them, the distinct days its
messages' own stamps name (`(8 May 2023) Caroline: …`, chatmem.memory.day_stamps), the
messages whose stamp names the same day as the message before them in the part, and what
those stamps cost. It answers "how many tokens would another way of carrying the recalled
messages free" before anyone builds it (benchmarks/results/packing_and_cold_eval.txt).

    python benchmarks/context_anatomy.py                     # 1,000 / 2,000 / 4,000
    python benchmarks/context_anatomy.py --budgets 2000 --dev /path/to/set

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import io
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEV_SET = Path("/work/shared/data/locomo-dev")


def anatomy(context: Any, counter: Any) -> Counter[str]:
    """One context's figures (see the module's docstring)."""
    from chatmem.memory.context import said_line
    from chatmem.memory.day_stamps import STAMP_WITHIN, stamped_day

    found: Counter[str] = Counter()
    for part in context.parts:
        found[f"{part.kind} tokens"] += part.tokens
        found[f"{part.kind} messages"] += len(part.messages)
        if part.kind != "recalled":
            continue
        messages = part.messages
        found["recalled format overhead"] += sum(
            m.tokens - counter.count_text(m.sent) for m in messages)
        found["recalled runs"] += sum(
            1 for i, m in enumerate(messages)
            if i == 0 or m.id is None or messages[i - 1].id is None
            or m.id != messages[i - 1].id + 1)
        found["recalled day lines"] += sum(1 for m in messages if m.said_on is not None)
        found["recalled day line tokens"] += sum(
            counter.count_text(said_line(m.said_on) + "\n") for m in messages
            if m.said_on is not None)
        days = [stamped_day(m.content) for m in messages]
        found["recalled stamped days"] += len({d for d in days if d is not None})
        for i, day in enumerate(days):
            if not i or day is None or day != days[i - 1]:
                continue
            found["recalled same day as before"] += 1
            text = messages[i].content
            # The stamp: the opening up to its closing bracket, if any, within STAMP_WITHIN.
            close = text.find(")", 0, STAMP_WITHIN)
            if close > 0:
                found["same-day stamp tokens"] += (counter.count_text(text)
                                                   - counter.count_text(text[close + 1:]))
    found["total"] += context.tokens
    return found


def measure(folder: Path, budget: int) -> tuple[dict[str, float], int]:
    """Mean figures per probe context of `retrieval:max_tokens=budget` over `folder`."""
    from chatmem.cli import app
    from chatmem.evaluation import playback
    from chatmem.tokens import counter_for_model

    counter = counter_for_model(None)
    totals: Counter[str] = Counter()
    seen = 0
    scored = playback.score_probe

    def reading(probe: Any, context: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal seen
        seen += 1
        totals.update(anatomy(context, counter))
        return scored(probe, context, *args, **kwargs)

    playback.score_probe = reading  # type: ignore[assignment]
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            app(["eval", str(folder), "-s", f"retrieval:max_tokens={budget}", "--provider",
                 "scripted", "--json", "--probes-only", "--jobs", "1"], standalone_mode=False)
    finally:
        playback.score_probe = scored  # type: ignore[assignment]
    return {k: v / max(seen, 1) for k, v in totals.items()}, seen


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", type=Path, default=DEV_SET, metavar="DIR")
    parser.add_argument("--budgets", type=int, nargs="+", default=[1000, 2000, 4000])
    args = parser.parse_args(argv)
    if not args.dev.is_dir():
        raise SystemExit(f"--dev {args.dev}: no such folder")
    results = [(b, *measure(args.dev, b)) for b in args.budgets]
    keys = sorted({k for _, figures, _ in results for k in figures})
    print(f"{args.dev}: mean per probe context, retrieval (defaults) at each budget")
    print(f"{'':<30}" + "".join(f"{b:>10,}" for b, _, _ in results))
    print(f"{'contexts':<30}" + "".join(f"{n:>10}" for _, _, n in results))
    for key in keys:
        print(f"{key:<30}" + "".join(f"{f.get(key, 0.0):>10.1f}" for _, f, _ in results))


if __name__ == "__main__":
    main()
