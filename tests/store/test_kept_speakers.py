"""A group chat's speakers of messages no turn stored as its input (a client's earlier named
messages, a fork's copies): kept by position, read with the turns' own, on every backend."""

from __future__ import annotations

from pathlib import Path

from cli_runner import invoke

from chatmem.errors import ExitCode
from chatmem.store import Store


def test_speakers_kept_with_messages_travel_with_a_fork_up_to_its_turn(store: Store) -> None:
    session = store.sessions.create_session("discord", "window")
    ids = store.history.import_messages(session.id, [
        {"role": "user", "content": "bob: I am allergic to penicillin.", "speaker": "bob"},
        {"role": "assistant", "content": "noted"},
        {"role": "user", "content": "小明：我叫小明。", "speaker": "小明"},
        {"role": "user", "content": "alice: typed by hand"}])
    assert store.history.speakers(session.id, ids) == {ids[0]: "bob", ids[2]: "小明"}
    report = store.forks.fork_session("discord", "f", at_turn=1)
    assert report.rebuilt == [] and report.copied == []
    fork = store.sessions.session("f").id
    added = store.history.import_messages(fork, [{"role": "user", "content": "小明：hi"}])
    copied = [m.id for m in store.history.messages(fork)]
    assert store.history.speakers(fork, copied) == {copied[0]: "bob"}
    assert added[0] in copied


def test_a_single_users_messages_have_no_speakers(store: Store) -> None:
    session = store.sessions.create_session("mine", "window")
    ids = store.history.import_messages(session.id, [{"role": "user", "content": "bob: hi"}])
    assert store.history.speakers(session.id, ids) == {}


def test_reset_state_leaves_the_speakers_alone(db_path: Path) -> None:
    """`sessions reset-state discord @speakers` dropped who said the messages, which nothing
    builds again: it is refused, and they stay."""
    with Store(db_path) as store:
        session = store.sessions.create_session("discord", "window")
        ids = store.history.import_messages(session.id, [
            {"role": "user", "content": "bob: hi", "speaker": "bob"}])
    result = invoke("sessions", "reset-state", "discord", "@speakers", "--db", str(db_path))
    assert result.exit_code == ExitCode.USAGE, result.stdout
    assert "@speakers" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    with Store(db_path) as store:
        assert store.history.speakers(session.id, ids) == {ids[0]: "bob"}


def test_a_purge_of_a_number_keeps_the_speaker_kept_at_that_position(store: Store) -> None:
    """Speakers are kept under their message's position: a purge of "1" (a fact's value, a
    PIN) rewrote the key "1" and that message lost its speaker, unsaid. A purge of the
    member's name still reaches the name."""
    session = store.sessions.create_session("discord", "window")
    ids = store.history.import_messages(session.id, [
        {"role": "user", "content": "bob: hi", "speaker": "bob"},
        {"role": "user", "content": "张伟：我的门牌号是 1", "speaker": "张伟"}])
    for needle in ("1", "0", "张伟"):
        store.redactions.rewrite_stored_text(
            [session.id], None, [needle],
            lambda text, n=needle: text.replace(n, "[forgotten]"))
    assert store.history.speakers(session.id, ids) == {ids[0]: "bob", ids[1]: "[forgotten]"}
