"""`chatmem index`: backfill message vectors for an existing history."""

from __future__ import annotations

import json

from cli_runner import invoke
from vectors import vector_models

from chatmem.store import Store


def history(tmp_path, embedder: str = "hash"):
    db = tmp_path / "h.db"
    with Store(db) as store:
        session = store.sessions.create_session("s", "retrieval")
        store.history.import_messages(session.id, [
            {"role": "user", "content": "My brother is a dentist."},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "我们五月去杭州旅行。"},
        ])
    config = tmp_path / "c.toml"
    config.write_text(f'[embeddings]\nprovider = "{embedder}"\n')
    return db, config


def test_index_embeds_each_message_once(tmp_path) -> None:
    db, config = history(tmp_path)
    args = ["index", "s", "--db", str(db), "--config", str(config), "--json"]
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    assert json.loads(first.output)["embedded"] == 3
    again = invoke(*args)
    assert json.loads(again.output)["embedded"] == 0
    with Store(db) as store:
        assert vector_models(store) == {"hash:256": 3}


def test_index_result_lines_stay_one_line_in_a_pipe(tmp_path) -> None:
    """They were cut at the width: "… in 14.1" on one line, "s" on the next."""
    db, config = history(tmp_path)
    args = ["index", "--db", str(db), "--config", str(config)]
    first = invoke(*args, width=30, code=0)
    assert first.stdout.startswith("every session: embedded 3 messages with hash:256 in ")
    assert first.stdout.count("\n") == 1
    again = invoke(*args, width=30, code=0)
    assert again.stdout == "every session: every message already has a vector for hash:256\n"


def test_index_without_an_embedder_says_how_to_get_one(tmp_path) -> None:
    db, config = history(tmp_path, "none")
    done = invoke("index", "--db", str(db), "--config", str(config))
    assert done.exit_code != 0
    assert "no embedder: pip install -e '.[embed]' in the chatmem checkout" in done.output


PLUGIN_EMBEDDER = """
class Grams:
    key = "grams:1"
    dimensions = 1

    def embed(self, texts, *, query=False):
        return [[1.0] for _ in texts]


def register(plugins):
    plugins.add_embedder("grams", lambda settings: Grams())
"""


def test_index_without_an_embedder_names_every_one_installed_a_plugins_too(
        tmp_path, installed) -> None:
    """It said "(local, openai)" whatever was installed: a plugin's was never offered."""
    installed("chatmemtest-grams", "chatmemtest_grams", PLUGIN_EMBEDDER, name="grams")
    db, config = history(tmp_path, "none")
    done = invoke("index", "--db", str(db), "--config", str(config))
    assert done.exit_code != 0
    assert "[embeddings] provider in the config (local, openai, hash, grams)" in " ".join(
        done.output.split())


def test_index_of_a_missing_session_fails_in_one_line(tmp_path) -> None:
    db, config = history(tmp_path)
    done = invoke("index", "nosuch", "--db", str(db), "--config", str(config))
    assert done.exit_code == 1
    assert "no session named 'nosuch'" in done.output


def test_a_chat_that_ends_with_messages_to_embed_says_how_many_and_index_finishes_them(
    tmp_path
) -> None:
    import re

    db, config = history(tmp_path)
    with Store(db) as store:
        session = store.sessions.session("s")
        store.history.import_messages(session.id, [
            {"role": role, "content": f"{role} line {n}: the ferry timetable, 渡轮时刻表 {n}"}
            for n in range(600) for role in ("user", "assistant")])
    common = ["--db", str(db), "--config", str(config)]
    done = invoke("chat", "s", "--strategy", "retrieval", "--provider",
                  "scripted", *common, input="when is the ferry?\n")
    assert done.exit_code == 0, done.output
    with Store(db) as store:
        left = store.vectors.count_without_vectors("hash:256", store.sessions.session("s").id)
    said = re.findall(r"indexing stopped: ([\d,]+) messages of session s have no vector for "
                      r"hash:256 yet", done.output)
    # What the chat says is left is what the file holds: said when there is any.
    assert [int(n.replace(",", "")) for n in said] == ([left] if left else [])
    finished = invoke("index", "s", "--json", *common)
    assert json.loads(finished.output)["embedded"] == left
    with Store(db) as store:
        assert vector_models(store) == {"hash:256": 3 + 1200 + 2}
