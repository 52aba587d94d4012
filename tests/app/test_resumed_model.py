"""A session resumed goes on on the model its latest turn ran on, as it keeps its strategy and
system prompt, unless one is chosen for this run (--model, -m, CHATMEM_MODEL, a template,
/model); a choice that differs from the session's is said, once, when it opens."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke

from chatmem.store import Store


@pytest.fixture
def setup(tmp_path: Path, chat_server) -> tuple[list[str], dict[str, str]]:
    """The --db and --config of a history whose config names model m1, and the environment
    of the test server."""
    config = tmp_path / "c.toml"
    config.write_text('model = "m1"\n[templates."快"]\nmodel = "m4"\n', encoding="utf-8")
    env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-x",
           "CHATMEM_MODEL": ""}
    return ["--db", str(tmp_path / "h.db"), "--config", str(config)], env


def chat(where: list[str], env: dict[str, str], *args: str, lines: list[str],
         code: int = 0) -> list[str]:
    result = invoke("chat", *args, *where, input="".join(f"{line}\n" for line in lines),
                    env=env, code=code)
    return result.stderr.splitlines()


def sent_models(chat_server) -> list[str]:
    models = [r["model"] for r in chat_server.requests]
    chat_server.requests.clear()
    return models


def test_a_model_chosen_with_model_is_the_sessions_next_time(setup, chat_server) -> None:
    where, env = setup
    chat(where, env, "旅行", lines=["你好", "/model m2", "我们五月去杭州"])
    assert sent_models(chat_server) == ["m1", "m2"]
    # The next day, by name or continued: the session's model, not the config's.
    said = chat(where, env, "旅行", lines=["/model", "几号出发?"])
    assert "model  openai:m2" in [line.strip() for line in said]
    assert not [line for line in said if "ran on" in line]  # nothing changed: nothing said
    chat(where, env, "-c", lines=["住哪里?"])
    assert sent_models(chat_server) == ["m2", "m2"]
    # A session it never ran in starts on the config's.
    chat(where, env, "other", lines=["hi"])
    assert sent_models(chat_server) == ["m1"]


@pytest.mark.parametrize(("how", "model", "by"), [
    (["--model", "m3"], "m3", "--model"),
    (["-m", "m3"], "m3", "--model"),
    (["--template", "快"], "m4", "template 快"),
])
def test_a_model_chosen_for_the_run_wins_and_is_said(setup, chat_server, how: list[str],
                                                      model: str, by: str) -> None:
    where, env = setup
    chat(where, env, "s", lines=["hi", "/model m2", "again"])
    sent_models(chat_server)
    said = chat(where, env, "s", *how, lines=["next"])
    assert sent_models(chat_server) == [model]
    assert f"session s ran on openai:m2; its next turns run on openai:{model} ({by})" in said
    with Store(Path(where[1])) as store:
        assert store.sessions.session("s").model == model  # and it is the session's now


def test_chatmem_model_in_the_environment_is_a_choice_too(setup, chat_server) -> None:
    where, env = setup
    chat(where, env, "s", lines=["hi", "/model m2", "again"])
    sent_models(chat_server)
    said = chat(where, {**env, "CHATMEM_MODEL": "m5"}, "s", lines=["next"])
    assert sent_models(chat_server) == ["m5"]
    assert "session s ran on openai:m2; its next turns run on openai:m5 (CHATMEM_MODEL)" in said


def test_a_model_a_template_chose_in_the_chat_is_kept(setup, chat_server) -> None:
    where, env = setup
    chat(where, env, "s", lines=["/template 快", "hi"])
    chat(where, env, "s", lines=["again"])
    assert sent_models(chat_server) == ["m4", "m4"]


def test_switch_resumes_each_sessions_own_model_unless_one_was_chosen(setup,
                                                                      chat_server) -> None:
    where, env = setup
    chat(where, env, "a", lines=["hi", "/model m2", "again"])
    chat(where, env, "b", lines=["hi"])
    sent_models(chat_server)
    said = chat(where, env, "b", lines=["/switch a", "to a", "/switch b", "to b"])
    assert sent_models(chat_server) == ["m2", "m1"]
    assert not [line for line in said if "ran on" in line]
    # /model in this chat is its choice: the session switched to runs on it, and says so.
    said = chat(where, env, "b", lines=["/model m6", "/switch a", "to a"])
    assert sent_models(chat_server) == ["m6"]
    assert "session a ran on openai:m2; its next turns run on openai:m6 (/model)" in said
    assert not [line for line in said if "session b ran on" in line]  # /model said it


def test_another_provider_runs_its_own_model_and_says_so(setup, chat_server) -> None:
    where, env = setup
    chat(where, env, "s", lines=["hi", "/model m2", "again"])
    said = chat(where, env, "s", "--provider", "scripted", lines=["/model"])
    assert "model  scripted:m1" in [line.strip() for line in said]
    assert ("session s ran on openai:m2; its next turns run on scripted:m1 (--provider)"
            in said)


def test_ask_in_a_session_runs_on_its_model_and_a_one_off_on_the_configs(setup,
                                                                          chat_server) -> None:
    where, env = setup
    chat(where, env, "s", lines=["hi", "/model m2", "again"])
    sent_models(chat_server)
    invoke("ask", "s", "再问一次", *where, env=env, code=0)
    invoke("ask", "one question", *where, env=env, code=0)
    assert sent_models(chat_server) == ["m2", "m1"]


def test_a_resumed_model_no_longer_offered_says_where_it_came_from(setup, chat_server) -> None:
    where, env = setup
    invoke("ask", "s", "-m", "m2", "你好", *where, env=env, code=0)
    chat_server.plan = ["404"]
    refused = invoke("ask", "s", "还在吗", *where, env=env, code=1)
    assert refused.stderr.rstrip("\n").endswith(
        "answered 404 for model 'm2': check the model name and base_url (session s's latest"
        " model; --model / -m / /model chooses another); it has test-large, test-small")
    # One named is the user's own choice: nothing more to say of it.
    chat_server.plan = ["404"]
    named = invoke("ask", "s", "-m", "m3", "还在吗", *where, env=env, code=1)
    assert named.stderr.rstrip("\n").endswith(
        "answered 404 for model 'm3': check the model name and base_url; it has test-large,"
        " test-small")


def test_an_imported_session_runs_on_the_configs_model_not_the_one_its_file_names(
        setup, chat_server, tmp_path: Path) -> None:
    # A transcript anyone wrote names the model in its header ("what it was recorded with"):
    # resumed on it, the user's next turns went to o1-pro on their own key, unsaid.
    where, env = setup
    crafted = tmp_path / "shared.jsonl"
    crafted.write_text(
        '{"chatmem": 1, "provider": "openai", "model": "o1-pro"}\n'
        '{"role": "user", "content": "我叫安娜"}\n{"role": "assistant", "content": "你好"}\n',
        encoding="utf-8")
    invoke("sessions", "import", str(crafted), "shared", *where, env=env, code=0)
    said = invoke("ask", "shared", "继续", *where, env=env, code=0).stderr.splitlines()
    chat(where, env, "shared", lines=["again"])
    assert sent_models(chat_server) == ["m1", "m1"]
    assert "session shared ran on openai:o1-pro; its next turns run on openai:m1 (the config" \
           " file)" in said
    # Once a turn here ran on one, it is the session's own, as for every other session.
    chat(where, env, "shared", lines=["/model m2", "hi"])
    chat(where, env, "shared", lines=["hi again"])
    assert sent_models(chat_server) == ["m2", "m2"]


def test_a_fork_goes_on_on_its_parents_model(setup, chat_server) -> None:
    # A fork copies no turn: its model is its parent's, which a turn here ran on.
    where, env = setup
    chat(where, env, "旅行", lines=["你好", "/model m2", "我们五月去杭州"])
    sent_models(chat_server)
    invoke("sessions", "fork", "旅行", "旅行2", *where, env=env, code=0)
    said = chat(where, env, "旅行2", lines=["住哪里?"])
    assert sent_models(chat_server) == ["m2"]
    assert not [line for line in said if "ran on" in line]


def test_resuming_reads_the_sessions_latest_turn_not_the_whole_history(
        tmp_path: Path) -> None:
    """Whether a turn here ran on the session's model read the history's turns from the
    first (no index holds a model, and each row's context comes before it): a session on
    a model the history took up lately read every earlier turn at each resume, `ask`
    included (0.2 s at 20,000 turns of 20 KB contexts). Its own latest turn says it."""
    from meter import metered

    from chatmem.app.conversations import resumed_model
    from chatmem.config.settings import Settings

    settings = Settings(provider="openai", model="m1")
    steps = []
    for earlier in (10, 300):
        with Store(tmp_path / f"{earlier}.db") as store:
            old = store.sessions.create_session("旧", "buffer", provider="openai", model="m1")
            new = store.sessions.create_session("新", "buffer", provider="openai", model="m2")
            with store.db.write():
                for number, (session, model) in enumerate(
                        [(old, "m1")] * earlier + [(new, "m2")], 1):
                    store.db.execute(
                        "INSERT INTO turns (session_id, number, status, input, context,"
                        " strategy, provider, model, created_at) VALUES"
                        " (?, ?, 'ok', '你好', ?, 'buffer', 'openai', ?, ?)",
                        [session.id, number, "{}" + " " * 5000, model,
                         "2026-05-01T09:00:00+00:00"])
            with metered(store) as meter:
                assert resumed_model(settings, new, store).model == "m2"
            steps.append(meter.steps)
    assert steps[1] <= steps[0] + 1, steps
