"""Replay, eval and `inspect --strategy` over the embedded SmolLM2-135M: as in a chat, it is
asked for no summary or facts, and that is said once (README: the embedded model).

They put the model inside wrappers of their own (counting its calls, opening it on first
use); the real model runs here, as in tests/providers/test_local.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_runner import invoke
from local_model import local_model_missing

from chatmem.providers.local import SMOLLM2_FILE
from chatmem.store import Store

pytestmark = pytest.mark.local

if (missing := local_model_missing()) is not None:
    pytest.skip(missing, allow_module_level=True)

TOO_SMALL = "is too small to write summaries or extract facts"

TRANSCRIPT = "\n".join(json.dumps(line, ensure_ascii=False) for line in [
    {"chatmem": 1, "provider": "local"},
    {"role": "user", "content": "我的订单号是 ORD-7731，我叫 Ada。"},
    {"role": "assistant", "content": "好的，记下了。"},
    {"role": "user", "content": "我住在杭州，下周二搬家。"},
    {"role": "assistant", "content": "明白。"},
    {"role": "user", "content": "请用英文回答。"},
    {"role": "assistant", "content": "Sure."},
    {"probe": "我的订单号是什么？", "expect_text": ["ORD-7731"]},
]) + "\n"


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    transcript = tmp_path / "订单.jsonl"
    transcript.write_text(TRANSCRIPT, encoding="utf-8")
    config = tmp_path / "config.toml"
    # One thread: llama.cpp's threads wait for each other by spinning (test_local.py).
    config.write_text("[local]\nthreads = 1\n", encoding="utf-8")
    return transcript, config


def test_replay_stores_no_summary_and_says_so_once(files: tuple[Path, Path],
                                                   tmp_path: Path) -> None:
    transcript, config = files
    db = tmp_path / "h.db"
    result = invoke("replay", str(transcript), "-s", "summary", "--save-as", "smol",
                    "--config", str(config), "--db", str(db))
    assert result.exit_code == 0, result.stderr
    assert " ".join(result.stderr.split()).count(TOO_SMALL) == 1
    # The transcript names no model: the notice named the provider ("summary: local (the
    # embedded SmolLM2-135M) is too small"), as if "local" were a model.
    said = " ".join(result.stderr.split())
    assert "summary: local (" not in said
    assert f"summary: {SMOLLM2_FILE.removesuffix('.gguf')} (the embedded SmolLM2-135M)" in said
    with Store(db) as store:
        session = store.sessions.session("smol")
        assert store.memory.summaries(session.id) == []
        assert len(store.history.messages(session.id)) == 6


def test_eval_asks_the_model_nothing_and_says_so_once(files: tuple[Path, Path]) -> None:
    transcript, config = files
    result = invoke("eval", str(transcript), "-s", "summary", "-s", "entity", "--json",
                    "--config", str(config))
    assert result.exit_code == 0, result.stderr
    runs = json.loads(result.stdout)["strategies"]
    assert [r["strategy_model_calls"] for r in runs] == [0, 0]
    said = [n for r in runs for n in r["notices"]]
    assert len(said) == 2 and all(TOO_SMALL in " ".join(n.split()) for n in said)


def test_inspect_strategy_asks_the_model_nothing_and_says_so_once(
        files: tuple[Path, Path], tmp_path: Path) -> None:
    transcript, config = files
    db = str(tmp_path / "h.db")
    invoke("sessions", "import", str(transcript), "--name", "trip", "--db", db, code=0)
    result = invoke("inspect", "trip", "--strategy", "summary", "--next", "我的订单号是什么？",
                    "--json", "--config", str(config), "--db", db)
    assert result.exit_code == 0, result.stderr
    assert " ".join(result.stderr.split()).count(TOO_SMALL) == 1
    assert json.loads(result.stdout)["replayed"]["strategy_model_calls"] == 0


def test_replay_names_each_strategy_once_before_the_too_small_notice(
    files: tuple[Path, Path]
) -> None:
    # The line names its strategies: the notice's own "summary: " after it said it twice
    # ("summary: summary: SmolLM2… is too small"), and two strategies made two lines.
    transcript, config = files
    result = invoke("replay", str(transcript), "-s", "summary", "-s", "entity",
                    "--config", str(config))
    assert result.exit_code == 0, result.stderr
    said = " ".join(result.stderr.split())
    assert said.count(TOO_SMALL) == 1
    assert re.search(r"summary, entity: \S+ \(the embedded SmolLM2-135M\) " + TOO_SMALL, said)
    assert "summary: summary" not in said and "entity: entity" not in said
