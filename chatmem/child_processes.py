"""The environment chatmem starts its own Python processes in (the background indexer, an
eval's worker pool): the current directory is never on their import path. (The user's own
programs, an editor or a clipboard or key command, start in config.keys.program_environment:
no history key.)

`python -m chatmem` and a spawned multiprocessing worker (`python -c ...`) put the current
directory first on `sys.path`, so a `typer.py` or `socket.py` in the folder the user ran
chatmem from would run as the user. PYTHONSAFEPATH (Python 3.11's `-P`) leaves it off; in
the environment, every process those children start inherits it too."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

SAFE_PATH = "PYTHONSAFEPATH"


def python_child_environment(environment: Mapping[str, str] | None = None) -> dict[str, str]:
    """`environment` (this process's by default) for a Python child: the cwd left off its path."""
    return {**(os.environ if environment is None else environment), SAFE_PATH: "1"}


@contextmanager
def safe_path_children() -> Iterator[None]:
    """While open, a Python process started with the inherited environment (a multiprocessing
    pool's workers, also those it starts again later) leaves the cwd off its path."""
    before = os.environ.get(SAFE_PATH)
    os.environ[SAFE_PATH] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(SAFE_PATH, None)
        else:
            os.environ[SAFE_PATH] = before
