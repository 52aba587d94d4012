"""A client that edits an earlier message of a chat an id names (Open WebUI, LibreChat: the
history it sends then stops before that message): its history is authoritative, so the id
moves to a new session holding it, and the session it named stays whole under another
name."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

from chat_server import ChatServer
from test_proxy import RunningProxy
from test_proxy_conversations import asker, proxy, turns

from chatmem.store import Store

__all__ = ["proxy"]  # the fixture, used by name


def sent(chat_server: ChatServer) -> list[str]:
    """What the model got last: its user and assistant messages' text."""
    return [m["content"] for m in chat_server.requests[-1]["messages"]
            if m["role"] != "system"]


def history(db: Path, name: str) -> list[str]:
    with Store(db) as store:
        return [m.content for m in store.history.messages(store.sessions.session(name).id)]


def test_an_edit_of_the_first_message_moves_the_id_to_the_clients_history(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    """Open WebUI's edit of the first message sends it alone: the model was sent Ann, Paris,
    Bob and the question, and a regenerate then added a turn with the question twice."""
    ask = asker(proxy, extra_headers={"X-Chatmem-Conversation": "edit"})
    said = [{"role": "user", "content": "my name is Ann"}]
    said.append({"role": "assistant", "content": ask(said)[0]})
    said.append({"role": "user", "content": "我住在巴黎"})
    assert ask(said)[1:] == ("edit@2", "next-turn")

    edited = [{"role": "user", "content": "my name is Bob"}]
    reply, turn, stored = ask(edited)
    assert (turn, stored) == ("edit@1", "branched")
    assert sent(chat_server) == ["my name is Bob"]
    edited += [{"role": "assistant", "content": reply},
               {"role": "user", "content": "我住在哪里？"}]
    assert ask(edited)[1:] == ("edit@2", "next-turn")
    assert ask(edited)[1:] == ("edit@2", "replaced-last-turn")  # a regenerate
    assert sent(chat_server) == ["my name is Bob", reply, "我住在哪里？"]
    # Nothing stored is lost: the history the client left is kept whole, renamed.
    assert turns(db_path) == {
        "edit": [("my name is Bob", "ok", False), ("我住在哪里？", "ok", True),
                 ("我住在哪里？", "ok", False)],
        "edit.before-edit-1": [("my name is Ann", "ok", False), ("我住在巴黎", "ok", False)]}
    assert any("edit.before-edit-1" in line for line in proxy.logged)


def test_an_edit_of_a_middle_message_keeps_the_history_before_it(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    """The client's history up to the edited message is the new session's, the session's
    strategy its strategy; a second edit keeps the first branch too."""
    ask = asker(proxy, extra_headers={"X-OpenWebUI-Chat-Id": quote("旅行")})
    said: list[dict[str, str]] = []
    for text in ["你好", "I live in Paris", "I like tea"]:
        said.append({"role": "user", "content": text})
        reply, turn, _ = ask(said)
        said.append({"role": "assistant", "content": reply})
    name = turn.rpartition("@")[0]
    edited = [*said[:2], {"role": "user", "content": "I live in Rome"}]
    assert ask(edited)[1:] == (f"{name}@2", "branched")
    assert sent(chat_server) == ["你好", said[1]["content"], "I live in Rome"]
    assert "Paris" not in json.dumps(chat_server.requests[-1])
    again = [*said[:2], {"role": "user", "content": "I live in Oslo"}]
    assert ask(again)[1:] == (f"{name}@2", "replaced-last-turn")  # the last: in place
    assert ask([{"role": "user", "content": "你好!"}])[1:] == (f"{name}@1", "branched")
    kept = turns(db_path)
    assert kept[name] == [("你好!", "ok", False)]
    assert [t[0] for t in kept[f"{name}.before-edit-1"]] == [
        "你好", "I live in Paris", "I like tea"]
    assert [t[0] for t in kept[f"{name}.before-edit-2"]] == ["I live in Rome", "I live in Oslo"]
    assert history(db_path, f"{name}.before-edit-2")[:2] == ["你好", said[1]["content"]]
    with Store(db_path) as store:
        assert {store.sessions.session(n).strategy for n in kept} == {"window"}


def test_a_client_that_goes_on_sends_a_window_or_only_its_message_keeps_its_session(
        proxy: RunningProxy, db_path: Path) -> None:
    """What leaves no stored history: a client that sends only its new message, and one
    that sends a window of the chat's end."""
    only = asker(proxy, extra_headers={"X-Chatmem-Conversation": "only-new"})
    for text in ["第一", "第二", "第三"]:
        assert only([{"role": "user", "content": text}])[2] != "branched"
    window = asker(proxy, extra_headers={"X-Chatmem-Conversation": "window"})
    said: list[dict[str, str]] = []
    for text in ["one", "two", "three", "four"]:
        said.append({"role": "user", "content": text})
        said.append({"role": "assistant", "content": window(said[-5:])[0]})
    assert {name: len(kept) for name, kept in turns(db_path).items()} == {
        "only-new": 3, "window": 4}



def test_a_reply_the_client_edited_then_went_on_from_moves_the_id_to_its_history(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    """SillyTavern, Open WebUI and LibreChat let the user edit the model's reply, then go
    on: the history sent after it holds the edited reply, and the model was sent the one
    it gave (the last exchange was taken as the one this server answered, unread), while an
    edit of any earlier reply moved the id. A reply sent back with its whitespace changed,
    or added to (a speaker's label), is still the one stored."""
    ask = asker(proxy, extra_headers={"X-Chatmem-Conversation": quote("角色")})
    said = [{"role": "user", "content": "讲个故事"}]
    reply = ask(said)[0]
    said += [{"role": "assistant", "content": f"\n{reply}  \n"},
             {"role": "user", "content": "接着讲"}]
    assert ask(said)[1:] == ("角色@2", "next-turn")
    said += [{"role": "assistant", "content": "从前有座山，山里有座庙。"},
             {"role": "user", "content": "然后呢？"}]
    assert ask(said)[1:] == ("角色@3", "branched")
    assert sent(chat_server) == [m["content"] for m in said]
    assert history(db_path, "角色")[:5] == [m["content"] for m in said]
    assert [t[0] for t in turns(db_path)["角色.before-edit-1"]] == ["讲个故事", "接着讲"]

    labelled = asker(proxy, extra_headers={"X-Chatmem-Conversation": quote("旁白")})
    said = []
    for at, text in enumerate(["第一", "第二", "第三"], 1):
        said.append({"role": "user", "content": text})
        reply, *stored = labelled(said)
        assert stored == [f"旁白@{at}", "new-session" if at == 1 else "next-turn"]
        said.append({"role": "assistant", "content": f"讲述者: {reply}"})
    assert "旁白.before-edit-1" not in turns(db_path)


def test_a_reply_its_client_trimmed_goes_on_without_a_branch_a_turn(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    """SillyTavern's "Trim Incomplete Sentences" (recommended with a short reply cap) keeps
    a reply cut mid-sentence up to its last full stop, and strips a speaker's label the
    model wrote itself: the copy it sends back holds part of the reply, not all of it. Each
    next message was taken for an edit of the reply: every turn moved the id to a new
    session holding the whole history again, its memory not carried over."""
    for label, words, trimmed in [
            ("裁剪", ["讲完了一句。", "还有半"], "讲完了一句。"),
            ("trim", ["Narrator: ", "One full sentence.", " And a half"],
             "One full sentence."),
            # Its speaker's label added (SillyTavern's names), the unfinished end trimmed.
            ("标签", ["讲完了一句。", "还有半"], "讲述者：讲完了一句。"),
            ("label", ["One full sentence.", " And a half"], "Narrator: One full sentence.")]:
        chat_server.reply_words = words
        ask = asker(proxy, extra_headers={"X-Chatmem-Conversation": quote(label)})
        said: list[dict[str, str]] = []
        for at, text in enumerate(["第一", "second", "第三"], 1):
            said.append({"role": "user", "content": text})
            reply, *stored = ask(said)
            assert reply == "".join(words)
            assert stored == [f"{label}@{at}", "new-session" if at == 1 else "next-turn"]
            said.append({"role": "assistant", "content": trimmed})
        assert [name for name in turns(db_path) if name.startswith(label)] == [label]
        assert len(turns(db_path)[label]) == 3
