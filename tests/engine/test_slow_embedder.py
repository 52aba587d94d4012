"""A plugin embedder slow to embed is said once, naming it and its plugin, as a slow plugin
strategy is (test_slow_build): 3 s a call made `ask` take 9.4 s instead of 2.9 s, its turn's
line saying 0.0 s and nothing naming the embedder."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke
from plugin_site import SLOW_EMBEDDER, Install

import chatmem.embeddings.guarded

WORDS = "to embed"


@pytest.mark.parametrize(("pause", "said"), [(0.3, 1), (0.0, 0)])
def test_a_slow_plugin_embedder_is_said_once_naming_its_plugin(
        installed: Install, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        pause: float, said: int) -> None:
    installed("chatmem-slowemb", "chatmem_slowemb", SLOW_EMBEDDER)
    monkeypatch.setattr(chatmem.embeddings.guarded, "SLOW_EMBED", 0.25)
    monkeypatch.setenv("EMBED_PAUSE", str(pause))
    config = tmp_path / "配置.toml"
    config.write_text('[embeddings]\nprovider = "slowemb"\n', encoding="utf-8")
    options = ("-s", "retrieval", "--provider", "scripted", "--config", str(config),
               "--db", str(tmp_path / "h.db"))
    # The third turn's build embeds its question to recall the first: the turn waits for
    # that call whatever the indexing beside it has finished (said once per process).
    warned: list[str] = []
    for line in ("我们五月去杭州", "住在西湖边", "我们住在哪里"):
        asked = invoke("ask", "--session", "记", line, *options, code=0)
        warned = [line for line in asked.stderr.splitlines() if WORDS in line]
        assert len(warned) <= 1, asked.stderr
    assert len(warned) == said, asked.stderr
    for line in warned:
        assert "'slowemb'" in line and "chatmem-slowemb" in line and "记" in line
