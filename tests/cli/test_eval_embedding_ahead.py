"""`eval DIR --jobs N` embeds each distinct text once, the work shared by its processes
(cli.corpus_embedding): counted at a real OpenAI-compatible embeddings endpoint on
127.0.0.1, which the worker processes reach as any run does."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import invoke

from chatmem.config.paths import vector_cache_path

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
KEY = {"CHATMEM_KEY": "a long enough passphrase 口令"}


@pytest.fixture
def endpoint(chat_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Recall embeds at `chat_server` (the `openai` embedder), for the workers too."""
    config = tmp_path / "config.toml"
    config.write_text(f'[embeddings]\nprovider = "openai"\nmodel = "counted"\n'
                      f'base_url = "{chat_server.base_url}"\n', encoding="utf-8")
    monkeypatch.setenv("CHATMEM_CONFIG", str(config))
    yield chat_server


def folder(tmp_path: Path, name: str, copies: int) -> str:
    """A folder of `copies` copies of the same transcript (every text shared by them)."""
    path = tmp_path / name
    path.mkdir()
    for n in range(copies):
        shutil.copy(SESSIONS / "long-chat.jsonl", path / f"copy-{n}.jsonl")
    return str(path)


def embedded(server: Any) -> int:
    """Texts sent to the endpoint to embed, and the count forgotten."""
    sent = sum(len(body["input"]) for body in server.requests if "input" in body)
    server.requests.clear()
    return sent


def evaluate(source: str, jobs: int, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = invoke("eval", source, "-s", "retrieval", "--jobs", str(jobs),
                    "--provider", "scripted", "--json", env=env)
    assert result.exit_code == 0, result.stderr
    return scores(result.stdout)


def scores(printed: str) -> dict[str, Any]:
    """What `eval --json` printed, without its timings and the folder's path."""
    data: dict[str, Any] = json.loads(printed)
    for transcript in data["transcripts"]:
        transcript["source"] = Path(transcript["source"]).name
        for run in transcript["strategies"]:
            run.pop("seconds", None)
    data["source"] = ""
    return data


@pytest.mark.parametrize("env", [None, KEY], ids=["cached", "encrypted"])
def test_a_cold_eval_with_two_jobs_embeds_each_distinct_text_once(
        endpoint: Any, tmp_path: Path, env: dict[str, str] | None) -> None:
    """Each job embedded its own transcript's texts: two transcripts sharing their texts,
    run at once from an empty cache, both embedded them all. An encrypted history keeps
    no cache file, and each transcript's run embedded anew."""
    evaluate(folder(tmp_path, "one", 1), 1, env)
    once = embedded(endpoint)
    assert once > 0
    vector_cache_path().unlink(missing_ok=True)
    two = folder(tmp_path, "two", 2)
    alone = evaluate(two, 1, env)
    embedded(endpoint)
    vector_cache_path().unlink(missing_ok=True)
    shared = evaluate(two, 2, env)
    assert embedded(endpoint) == once
    assert shared == alone  # the same vectors, so the same recall
    assert vector_cache_path().exists() is (env is None)


def test_an_endpoint_embedder_finds_its_vectors_in_the_cache_from_its_first_lookup(
        endpoint: Any, tmp_path: Path) -> None:
    """An endpoint's width is known only from its first answer: each run looked its first
    texts up with width 0, found none of the right size, and sent them again."""
    source = folder(tmp_path, "one", 1)
    first = evaluate(source, 1)
    assert embedded(endpoint) > 0
    assert evaluate(source, 1) == first
    assert embedded(endpoint) == 0


def test_a_second_eval_with_two_jobs_embeds_ahead_only_what_the_cache_lacks(
        endpoint: Any, tmp_path: Path) -> None:
    """A warm `eval DIR --jobs 2` still sent every distinct text to its processes in chunks
    of 48 (a workspace opened for each, to find them all in the cache) and said "embedding
    N distinct texts" for texts it did not embed: now only those the cache lacks."""
    source = folder(tmp_path, "two", 2)
    first = invoke("eval", source, "-s", "retrieval", "--jobs", "2", "--provider", "scripted",
                   "--json")
    assert first.exit_code == 0, first.stderr
    assert embedded(endpoint) > 0
    assert "distinct texts" in first.stderr  # the cold run embeds ahead, and says so
    again = invoke("eval", source, "-s", "retrieval", "--jobs", "2", "--provider", "scripted",
                   "--json")
    assert again.exit_code == 0, again.stderr
    assert embedded(endpoint) == 0
    assert "distinct texts" not in again.stderr
    assert scores(again.stdout) == evaluate(source, 1)  # a warm run with two jobs, as again
