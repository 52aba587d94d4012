"""Patterns compiled when first used: a command that never matches one never compiles it, and
a lazy pattern matches what `re.compile` of the same pattern and flags matches."""

from __future__ import annotations

import os
import pkgutil
import re
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

import chatmem
from chatmem.lazy_patterns import LazyPattern, compile_pending, lazy, made

PROBE = """
import re, sys, runpy, atexit
from re import _compiler
real = _compiler.compile
counts = {"chatmem": 0}
def counting(p, flags=0):
    f = sys._getframe(1)
    while f is not None and f.f_globals.get("__name__", "").startswith(("re", "sre")):
        f = f.f_back
    if f is not None and f.f_globals.get("__name__", "").startswith("chatmem"):
        counts["chatmem"] += 1
    return real(p, flags)
_compiler.compile = counting
atexit.register(lambda: print("COMPILED=%d" % counts["chatmem"], file=sys.stderr))
sys.argv = ["chatmem"] + sys.argv[1:]
runpy.run_module("chatmem", run_name="__main__")
"""


def test_listing_sessions_compiles_few_of_the_readers_patterns(tmp_path: Path) -> None:
    """`sessions list` loads every strategy and privacy check (the registry lists them) but
    matches none of their ~200 patterns: compiling them all was a third of a second of every
    start (217 compiled before, 39 now)."""
    env = {**os.environ, "CHATMEM_DB": str(tmp_path / "h.db"),
           "CHATMEM_CONFIG": str(tmp_path / "config.toml"), "NO_COLOR": "1"}
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    made_one = subprocess.run(
        [sys.executable, "-m", "chatmem", "ask", "--provider", "scripted", "work", "hi"],
        capture_output=True, text=True, env=env, timeout=120)
    assert made_one.returncode == 0, made_one.stderr
    done = subprocess.run([sys.executable, "-c", PROBE, "sessions", "list", "--json"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert '"work"' in done.stdout
    compiled = int(done.stderr.rsplit("COMPILED=", 1)[1].split()[0])
    assert 0 < compiled <= 80


def test_every_lazy_pattern_is_what_re_compile_makes() -> None:
    for info in pkgutil.walk_packages(chatmem.__path__, "chatmem."):
        if not info.name.endswith("__main__"):
            import_module(info.name)
    patterns = made()
    assert len(patterns) > 150
    for pattern in patterns:
        compiled = pattern.compiled()  # every one compiles (an error is no longer at import)
        assert compiled == re.compile(pattern.pattern, pattern._flags)
        assert pattern.flags == compiled.flags
        assert pattern.groupindex == compiled.groupindex


def test_a_lazy_pattern_answers_as_the_compiled_one() -> None:
    text = "订单 ORD-7731 于 3月4号 ships; Order ord-7731"
    source, flags = r"(?P<id>ord-(?P<n>\d+))", re.IGNORECASE
    compiled = re.compile(source, flags)
    pattern = lazy(source, flags)
    assert pattern.pattern == source
    assert [m.span() for m in pattern.finditer(text)] == [m.span() for m in
                                                          compiled.finditer(text)]
    assert pattern.findall(text) == compiled.findall(text) == [("ORD-7731", "7731"),
                                                               ("ord-7731", "7731")]
    assert pattern.sub("#", text) == compiled.sub("#", text)
    assert pattern.split(text) == compiled.split(text)
    match = pattern.search(text)
    assert match is not None and match.group("n") == "7731"
    assert pattern.fullmatch("ORD-1") is not None and pattern.match("x ORD-1") is None
    assert pattern.flags == compiled.flags and pattern.groups == 2
    # From the first use on, the compiled pattern's own methods answer (no extra call).
    assert pattern.search == compiled.search
    assert "search" in vars(pattern)


def test_a_lazy_pattern_compiles_only_when_used() -> None:
    pattern = LazyPattern("(unclosed")  # an error re.compile would raise at once
    assert pattern.pattern == "(unclosed"
    with pytest.raises(re.error):
        pattern.compiled()


def test_compile_pending_compiles_the_longest_first_and_at_least_one() -> None:
    compile_pending(60.0)  # whatever earlier tests left
    short, long = lazy("[a-z]+"), lazy("(?:" + "|".join(f"word{i}" for i in range(300)) + ")")
    assert compile_pending(0.0) == 1  # no time at all: still one, the longest
    assert long._compiled is not None and short._compiled is None
    short.search("x")  # compiled by a use: nothing left to do
    assert compile_pending(60.0) == 0
    assert compile_pending(60.0) == 0
