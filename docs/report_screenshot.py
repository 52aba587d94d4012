"""Regenerate docs/report.png, the README's picture of an eval report, from a run.

    python docs/report_screenshot.py

Runs the eval below in a fresh HOME (as docs/readme_examples.py runs the examples),
writes its HTML report, and screenshots it in Debian's headless Chromium at 1000 px.
The numbers in the picture are the numbers chatmem prints today.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PICTURE = ROOT / "docs" / "report.png"
COMMAND = ("chatmem eval sessions/travel-zh.jsonl -s buffer -s window -s tokens -s summary "
           "-s entity -s retrieval")
"""The eval the picture shows (the README's alt text names its transcript)."""
WIDTH, HEIGHT = 1000, 1480
BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--hide-scrollbars"]


def browser() -> str | None:
    return next((found for name in ("chromium", "chromium-browser", "google-chrome")
                 if (found := shutil.which(name))), None)


def main() -> int:
    binary = browser()
    if binary is None:
        print("no headless Chromium: apt-get install chromium fonts-noto-cjk", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="chatmem-report-"))
    try:
        report = work / "report.html"
        env = {"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "HOME": str(work),
               "COLUMNS": "80"}
        subprocess.run([*shlex.split(COMMAND), "--report", str(report)], cwd=ROOT, env=env,
                       check=True, stdout=subprocess.DEVNULL)
        shot = work / "report.png"
        subprocess.run([binary, *BROWSER_FLAGS, f"--user-data-dir={work / 'profile'}",
                        f"--window-size={WIDTH},{HEIGHT}", "--virtual-time-budget=5000",
                        f"--screenshot={shot}", report.as_uri()],
                       check=True, capture_output=True, timeout=300)
        shutil.copyfile(shot, PICTURE)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"updated {PICTURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
