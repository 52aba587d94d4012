"""Tab completion of /inspect and /summary reads a bounded number of rows per keystroke,
however long the session, and nothing again while the newest turn or version is the same."""

from __future__ import annotations

from pathlib import Path

from cli_runner import invoke
from meter import Meter, metered
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.privacy.mentions import MARKER
from chatmem.providers.scripted import ScriptedProvider
from chatmem.render import make_console
from chatmem.repl.completion import RECENT, SlashCompleter
from chatmem.repl.loop import Repl
from chatmem.store import Store


def grown(db: Path, turns: int, strategy: str = "window") -> tuple[Store, Repl]:
    store = Store(db)
    engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "s",
                          strategy=strategy)
    for n in range(turns):
        engine.run_turn(f"turn {n} 第{n}轮")
    return store, Repl(engine, make_console(), make_console(stderr=True))


def completing(store: Store, completer: SlashCompleter,
               text: str) -> tuple[list[tuple[str, str]], Meter]:
    with metered(store) as meter:
        found = [(c.text, c.display_meta_text)
                 for c in completer.get_completions(Document(text), CompleteEvent())]
    return found, meter


def test_inspect_completion_reads_the_same_at_30_and_90_turns(tmp_path: Path) -> None:
    work = []
    for turns in (30, 90):
        store, repl = grown(tmp_path / f"{turns}.db", turns)
        with store:
            completer = SlashCompleter(repl)
            found, first = completing(store, completer, "/inspect ")
            assert [n for n, _ in found] == [str(turns - i) for i in range(RECENT)]
            assert found[0][1] == f"ok: turn {turns - 1} 第{turns - 1}轮"
            _, again = completing(store, completer, "/inspect 8")
            assert again.statements < first.statements  # only the newest turn is read
            repl.engine.run_turn("one more")
            found, _ = completing(store, completer, "/inspect ")
            assert found[0] == (str(turns + 1), "ok: one more")  # a new turn is seen
            work.append((first.statements, first.rows, again.statements, again.rows))
    assert work[0] == work[1]


def test_summary_completion_reads_recent_versions_of_the_summary_in_use(
    tmp_path: Path,
) -> None:
    store, repl = grown(tmp_path / "s.db", 2, strategy="summary")
    with store:
        session = repl.engine.session.id
        for n in range(60):
            store.memory.add_summary(session, "summary", f"v{n} 摘要", covered_ids=[1])
        store.memory.add_summary(session, "summary-buffer", "another strategy's", covered_ids=[1])
        latest = store.memory.latest_summary(session, "summary")
        assert latest is not None
        completer = SlashCompleter(repl)
        found, first = completing(store, completer, "/summary ")
        assert [v for v, _ in found] == [str(latest.version - i) for i in range(RECENT)]
        assert all(meta.startswith("summary · ") for _, meta in found)
        assert first.rows <= 2 * RECENT  # not every one of the 60+ versions
        _, again = completing(store, completer, "/summary 1")
        assert again.rows <= 2  # the newest version, and the session's count of erasures


def test_inspect_completion_offers_the_conversation_s_turn_numbers(tmp_path: Path) -> None:
    """`/inspect N` takes the conversation's turn (b090224); after an import its completion
    still offered request numbers: 1–3 for turns 41–43, and /inspect 1 showed imported turn 1."""
    store, repl = grown(tmp_path / "h.db", 0)
    with store:
        store.history.import_messages(repl.engine.session.id, [
            {"role": role, "content": f"{role} {n} 导入的第{n}轮"}
            for n in range(1, 41) for role in ("user", "assistant")])
        for n in range(3):
            repl.engine.run_turn(f"chatted {n} 聊天第{n}轮")
        found, _ = completing(store, SlashCompleter(repl), "/inspect ")
        assert found == [("43", "ok: chatted 2 聊天第2轮"), ("42", "ok: chatted 1 聊天第1轮"),
                         ("41", "ok: chatted 0 聊天第0轮")]


def test_inspect_completion_drops_text_another_process_erased(tmp_path: Path) -> None:
    """The menu kept its rows until the newest turn changed: a purge in another shell
    leaves the numbers as they are, and Tab went on offering 'ok: my name is Zebulon'."""
    db = tmp_path / "h.db"
    store, repl = grown(db, 1)
    with store:
        repl.turn("my name is Zebulon, 我住在奥斯陆")
        repl.command("/remember name: Zebulon")
        completer = SlashCompleter(repl)
        found, _ = completing(store, completer, "/inspect ")
        assert found[0] == ("2", "ok: my name is Zebulon, 我住在奥斯陆")
        invoke("facts", "forget", "s", "name", "--purge", "--yes", "--db", str(db), code=0)
        found, _ = completing(store, completer, "/inspect ")
        assert found[0] == ("2", f"ok: my name is {MARKER}, 我住在奥斯陆")
        assert not [meta for _, meta in found if "Zebulon" in meta]
