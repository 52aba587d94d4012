"""Regenerate the examples in README.md and docs/compare.md by running them, at 80 columns.

    python docs/readme_examples.py            # rewrite the examples in place
    python docs/readme_examples.py --check    # exit 1 and show what is stale

An example is a ```console block whose first line starts with `$ `:

- every `$ ` line is a command, run with bash from the repository root in a
  fresh HOME (one per block, so a block's commands share a history file),
  with COLUMNS=80, no colour, no CHATMEM_*/OPENAI_* variables; stdout and
  stderr are shown together, as a terminal shows them;
- a `$ chatmem chat …` command may be followed by prompt lines `SESSION> text`:
  each text is typed in (piped), and its turn's output follows its prompt line,
  split at the scripted provider's replies (`echo #n:`); a prompt line followed
  by a line `…` has its output left out; the banner is left out;
- every other line of the block is output, and is replaced.

The temporary HOME shows as `~`. Latency (`0.0 s`) is the one figure that may
differ between runs; tests/test_readme.py masks it when it compares.
Other engineers' changes alter these outputs: rebase, then run this script.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = (ROOT / "README.md", ROOT / "docs" / "compare.md")
BLOCK = re.compile(r"^```console\n(\$ .*?)^```\n", re.S | re.M)
PROMPT = re.compile(r"^([\w.+-]+)> (.*)$")
REPLY = re.compile(r"^echo #\d+: ")
ELIDED = "…"


@dataclass
class Step:
    command: str
    inputs: list[tuple[str, str, bool]]
    """(session, typed text, output shown) for a chat with prompt lines."""


def parse(block: str) -> list[Step]:
    steps: list[Step] = []
    lines = block.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("$ "):
            steps.append(Step(line[2:], []))
        elif steps and (match := PROMPT.match(line)):
            shown = not (i + 1 < len(lines) and lines[i + 1] == ELIDED)
            steps[-1].inputs.append((match.group(1), match.group(2), shown))
    return steps


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CHATMEM_", "OPENAI_", "XDG_", "FORCE_COLOR"))}
    # TZ as the tests set it: eval's caption names the zone days were read in.
    env.update(HOME=str(home), COLUMNS="80", LINES="50", NO_COLOR="1", TERM="dumb", TZ="UTC")
    return env


def run(command: str, home: Path, stdin: str = "") -> str:
    # Grouped: a bare `2>&1` binds to the last command of a list (`a; echo "exit $?"`) or
    # pipeline only, and the first one's error line went missing from the example.
    done = subprocess.run(["bash", "-c", f"{{ {command}\n}} 2>&1"], cwd=ROOT,
                          env=environment(home),
                          input=stdin, capture_output=True, text=True, timeout=900, check=False)
    return done.stdout.replace(str(home), "~")


def render_chat(step: Step, output: str) -> list[str]:
    """Prompt lines, each followed by its turn's output (split at the replies)."""
    turns: list[list[str]] = []
    for line in output.splitlines():
        if REPLY.match(line) or not turns:
            turns.append([])
        turns[-1].append(line)
    turns = turns[1:] if turns and not REPLY.match(turns[0][0]) else turns  # the banner
    shown: list[str] = []
    for (session, text, visible), lines in zip(step.inputs, turns, strict=False):
        shown.append(f"{session}> {text}")
        shown.extend(lines if visible else [ELIDED])
    return shown


def generate(block: str) -> str:
    """The block as it should read: its commands and their output now."""
    lines: list[str] = []
    home = Path(tempfile.mkdtemp(prefix="chatmem-readme-"))
    try:
        for step in parse(block):
            lines.append(f"$ {step.command}")
            if step.inputs:
                typed = "".join(f"{text}\n" for _, text, _ in step.inputs)
                lines.extend(render_chat(step, run(step.command, home, typed)))
            else:
                lines.extend(run(step.command, home).rstrip("\n").splitlines())
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return "\n".join(line.rstrip() for line in lines) + "\n"


def blocks(text: str) -> list[str]:
    return [match.group(1) for match in BLOCK.finditer(text)]


def regenerate(text: str) -> str:
    return BLOCK.sub(lambda m: f"```console\n{generate(m.group(1))}```\n", text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale examples")
    parser.add_argument("files", nargs="*", type=Path, default=list(FILES))
    args = parser.parse_args()
    stale = 0
    for path in (p.resolve() for p in args.files):  # a relative one is named from ROOT
        old = path.read_text(encoding="utf-8")
        new = regenerate(old)
        if new == old:
            continue
        stale += 1
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True),
                str(path), f"{path} (regenerated)"))
        else:
            path.write_text(new, encoding="utf-8")
            print(f"updated {path.relative_to(ROOT)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
