"""A stored session's turns replayed with the files they sent (`ask -a`, `/attach`): a
strategy is measured on the prompts the chat had."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from cli_runner import invoke
from group_chat import write_group_chat

from chatmem.store import Store


def test_a_replayed_turn_sends_the_files_its_turn_sent(tmp_path: Path) -> None:
    """Leftover: replay and eval re-ran a session's turns without their attachments, so a
    strategy was measured on smaller prompts than the chat sent (the file's tokens gone)."""
    db = str(tmp_path / "h.db")
    notes = tmp_path / "notes.txt"
    notes.write_text("航班 BA117 于周五 09:40 抵达里斯本。The hotel is on Rua Augusta.\n" * 20,
                     encoding="utf-8")
    for args in (("-a", str(notes), "when do I land?"), ("and the hotel?",)):
        result = invoke("ask", "trip", *args, "--db", db, "--provider", "scripted",
                        "-s", "buffer")
        assert result.exit_code == 0, result.stderr
    with Store(db) as store:
        turns = store.turns.turns(store.sessions.session("trip").id)
        chat = [t.estimated_tokens for t in turns]
    result = invoke("replay", "trip", "-s", "buffer", "--save-as", "again", "--json",
                    "--db", db, "--provider", "scripted")
    assert result.exit_code == 0, result.stderr
    with Store(db) as store:
        session = store.sessions.session("again")
        first, second = store.turns.turns(session.id)
        files = [p for p in first.context["parts"] if p["kind"] == "files"]
        assert len(files) == 1 and "Rua Augusta" in files[0]["messages"][0]["content"]
        assert not [p for p in second.context["parts"] if p["kind"] == "files"]
        assert [t.estimated_tokens for t in (first, second)] == chat
    # The figures replay shows are the chat's own.
    assert json.loads(result.stdout)["strategies"][0]["prompt_tokens"]["per_turn"] == chat


def test_a_replayed_image_is_sent_to_a_model_that_sees_it_and_described_to_one_that_does_not(
        chat_server, tmp_path: Path) -> None:
    from documents import png

    env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-test-key-1234"}
    db = str(tmp_path / "h.db")
    photo = tmp_path / "red.png"
    photo.write_bytes(png(1024, 600))
    result = invoke("ask", "pic", "-m", "vision", "-a", str(photo), "what colour?", "--db", db,
                    "-s", "buffer", env=env)
    assert result.exit_code == 0, result.stderr
    with Store(db) as store:
        [turn] = store.turns.turns(store.sessions.session("pic").id)
    seen = invoke("replay", "pic", "-s", "buffer", "--json", "--db", db, env=env)
    assert seen.exit_code == 0, seen.stderr
    assert json.loads(seen.stdout)["strategies"][0]["prompt_tokens"]["per_turn"] == [
        turn.estimated_tokens]
    # The scripted model sees no image: the replay goes on with its description alone.
    blind = invoke("replay", "pic", "-s", "buffer", "--json", "--db", db, "--provider",
                   "scripted")
    assert blind.exit_code == 0, blind.stderr
    [run] = json.loads(blind.stdout)["strategies"]
    assert run["prompt_tokens"]["per_turn"] == [turn.estimated_tokens - 765]  # 2 × 2 tiles
    assert run["notices"] == [f"turn 1: {photo} sent as its description alone: the model"
                              " cannot see images; this turn's figures are not the chat's"]
    # An image whose bytes the session no longer holds is not sent, and replay says so.
    with sqlite3.connect(db) as connection:
        assert connection.execute("DELETE FROM images").rowcount == 1
    gone = invoke("replay", "pic", "-s", "buffer", "--json", "--db", db, env=env)
    assert gone.exit_code == 0, gone.stderr
    [run] = json.loads(gone.stdout)["strategies"]
    # Its description was the text beside its bytes: neither is sent.
    assert run["prompt_tokens"]["per_turn"][0] < turn.estimated_tokens - 765
    assert run["notices"] == [f"turn 1: {photo} not sent again: the session no longer holds"
                              " the image; this turn's figures are not the chat's"]


def test_a_replayed_group_chat_turn_leaves_its_askers_label_unsearched(tmp_path: Path) -> None:
    """Leftover: a stored group chat's turn was sent with recall searching its input without
    the asker's label (ContextRequest.speaker), but a replay of the session passed no
    speaker, so "alice: what did bob say about the ferry?" matched all alice wrote."""
    transcript = write_group_chat(tmp_path / "group.json")
    db = str(tmp_path / "h.db")
    spec = "retrieval:recent=1,mode=bm25"
    for source, name in ((str(transcript), "chat"), ("chat", "again")):
        result = invoke("replay", source, "-s", spec, "--save-as", name, "--db", db,
                        "--provider", "scripted")
        assert result.exit_code == 0, result.stderr
    with Store(db) as store:
        for name in ("chat", "again"):
            session = store.sessions.session(name).id
            text = {m.id: m.content for m in store.history.messages(session)}
            rows = store.turns.turn(session, None).context["recall"]
            assert [text[r["id"]] for r in rows if r["bm25"] > 0] == [
                "bob: The ferry leaves at nine"], name
