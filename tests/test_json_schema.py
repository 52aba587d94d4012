"""Every --json output validates against docs/chatmem.schema.json (described in docs/json.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from chat_server import ChatServer
from cli_runner import invoke

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "chatmem.schema.json").read_text(encoding="utf-8"))
SESSIONS = ROOT / "sessions"
pytestmark = pytest.mark.usefixtures("hash_embedder")  # about shapes, not ranking


def validator(definition: str) -> jsonschema.protocols.Validator:
    """A validator for one $defs entry, resolving references inside the file."""
    sub = {"$schema": SCHEMA["$schema"], "$defs": SCHEMA["$defs"],
           "$ref": f"#/$defs/{definition}"}
    cls = jsonschema.validators.validator_for(SCHEMA)
    cls.check_schema(SCHEMA)
    return cls(sub)


def output(*args: str, input: str | None = None) -> Any:
    result = invoke(*args, "--json", input=input)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Path) -> str:
    """A history with a chatted entity session (facts, a /system change) and two imports."""
    path = str(tmp_path_factory.mktemp("schema") / "x.db")
    result = invoke("chat", "e", "-s", "window+entity", "--provider", "scripted",
                    "--db", path,
                    input="My name is Ada.\n/system Be terse.\n我的城市是杭州。\n")
    assert result.exit_code == 0, result.stderr
    for sample in ("support", "travel-zh"):
        imported = invoke("sessions", "import", str(SESSIONS / f"{sample}.jsonl"),
                          "--db", path)
        assert imported.exit_code == 0, imported.stderr
    replayed = invoke("replay", "support", "-s", "summary-buffer:max_tokens=600",
                      "--save-as", "sb", "--db", path)
    assert replayed.exit_code == 0, replayed.stderr
    return path


def check(definition: str, data: Any) -> None:
    validator(definition).validate(data)
    # and the top-level schema accepts it as one of the documented outputs
    jsonschema.validators.validator_for(SCHEMA)(SCHEMA).validate(data)


@pytest.mark.parametrize("args", [
    ("--turn", "1"),
    ("--next", "where do I live?"),
    ("--turn", "2", "-s", "buffer"),
    ("--next", "hi", "-s", "entity:k=1"),
])
def test_inspect(db: str, args: tuple[str, ...]) -> None:
    data = output("inspect", "e", "--db", db, *args)
    check("inspect", data)
    assert data["tokenizer"]["name"] == "cl100k_base"


def test_inspect_summaries(db: str) -> None:
    data = output("inspect", "sb", "--summaries", "--db", db)
    check("summaries", data)
    assert data["summaries"]


@pytest.mark.parametrize("command", ["replay", "eval"])
def test_replay_and_eval_share_one_shape(db: str, command: str) -> None:
    data = output(command, str(SESSIONS / "travel-zh.jsonl"), "-s", "window:k=2", "-s",
                  "summary-buffer+retrieval", "-s", "entity")
    check("outcome", data)
    assert data["command"] == command
    assert [s["strategy"]["label"] for s in data["strategies"]] == [
        "window k=2", "summary-buffer+retrieval", "entity"]
    assert all(len(s["eval"]["per_probe"]) == 7 for s in data["strategies"])
    stored = output(command, "support", "-s", "buffer", "--db", db)
    check("outcome", stored)


def test_eval_probes_only_has_the_same_shape() -> None:
    data = output("eval", str(SESSIONS / "travel-zh.jsonl"), "-s", "retrieval",
                  "--probes-only")
    check("outcome", data)
    assert data["strategies"][0]["probes_only"] is True


def test_eval_of_a_folder(tmp_path: Path) -> None:
    for sample in ("support", "travel-zh"):
        (tmp_path / f"{sample}.jsonl").write_bytes((SESSIONS / f"{sample}.jsonl").read_bytes())
    data = output("eval", str(tmp_path), "-s", "window:k=2", "-s", "retrieval", "--jobs", "1",
                  "--provider", "scripted")
    check("corpus", data)
    assert [row["label"] for row in data["aggregate"]] == ["window k=2", "retrieval"]
    assert len(data["transcripts"]) == 2


def test_sessions_and_facts_listings(db: str) -> None:
    sessions = output("sessions", "list", "--db", db)
    check("sessions_list", sessions)
    assert {s["name"] for s in sessions} == {"e", "support", "travel-zh", "sb"}
    shown = output("sessions", "show", "e", "--db", db)
    check("session_show", shown)
    assert shown["strategy"]["label"].startswith("window+entity window.k=5")
    facts = output("facts", "list", "--db", db)
    check("facts_list", facts)
    assert any(f["kind"] == "fact" for f in facts) and any(f["kind"] == "pinned" for f in facts)


def test_prune_listing(db: str) -> None:
    pruned = output("sessions", "prune", "--older-than", "1h", "--dry-run", "--db", db)
    check("prune", pruned)
    assert pruned["dry_run"] is True and pruned["sessions"] == []


def test_purge_plan(db: str) -> None:
    plan = output("facts", "forget", "e", "name", "--purge", "--dry-run", "--db", db)
    check("purge_plan", plan)
    said = plan["messages"]
    assert said and all(m["content"][a:b] == "Ada" for m in said for a, b in m["mentions"])
    assert plan["changes"]["messages"] == len([m for m in said if m["mentions"]])


def test_ask(db: str) -> None:
    asked = output("ask", "e", "我的城市是哪里？", "--db", db, "--provider", "scripted")
    check("ask", asked)
    assert asked["session"] == "e" and set(asked["tokens"]["parts"]) >= {"facts", "input"}


@pytest.mark.parametrize(("plan", "cut", "reply"), [
    ("filtered-empty", "filter", ""), ("filtered", "filter", "Hello from the test server."),
    ("ok", None, "Hello from the test server.")])
def test_ask_says_what_cut_the_reply(chat_server: ChatServer, tmp_path: Path, plan: str,
                                     cut: str | None, reply: str) -> None:
    """A filtered reply was `"reply": "", "status": "ok"` with nothing saying it was cut; and
    a one-off question's notice said the reply "is stored" when nothing is."""
    chat_server.plan = [plan]
    db = tmp_path / "h.db"
    result = invoke("ask", "讲个笑话", "--provider", "openai", "--model", "test-small", "--json",
                    "--db", str(db), env={"OPENAI_BASE_URL": chat_server.base_url})
    assert result.exit_code == 0, result.stderr
    asked = json.loads(result.stdout)
    check("ask", asked)
    assert (asked["cut"], asked["reply"], asked["session"]) == (cut, reply, None)
    assert "stored" not in result.stderr and not db.exists()
    if cut is not None:
        assert "content filter" in result.stderr


def test_logs_and_models(db: str, tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[aliases]\nfast = "scripted"\n[prices."scripted"]\ninput = 1\n'
                      'output = 2\n', encoding="utf-8")
    logs = output("logs", "--db", db, "--config", str(config))
    check("logs", logs)
    assert logs and all(entry["cost"]["currency"] == "$" for entry in logs)
    check("logs", output("logs", "-q", "城市", "--db", db))
    full = output("logs", "--full", "--db", db)
    check("logs", full)
    assert full and all(isinstance(entry["reply"], str) for entry in full)
    last = output("logs", "-r", "--db", db)
    check("logs", last)
    assert [entry["reply"] for entry in last] == [full[0]["reply"]]
    models = output("models", "--provider", "scripted", "--config", str(config))
    check("models", models)
    assert models["aliases"] == {"fast": "scripted"}
    asked = output("ask", "hi", "--provider", "scripted", "--config", str(config))
    check("ask", asked)
    assert asked["cost"]["amount"] > 0


def test_index(tmp_path: Path) -> None:
    db = str(tmp_path / "i.db")
    imported = invoke("sessions", "import", str(SESSIONS / "travel-zh.jsonl"), "e",
                      "--db", db, "--no-index")
    assert imported.exit_code == 0, imported.stderr
    first = output("index", "--db", db)
    check("index", first)
    assert first["session"] is None and first["embedded"] > 0 and first["elsewhere"] == []
    again = output("index", "e", "--db", db)
    check("index", again)
    assert again["session"] == "e" and again["embedded"] == 0


def test_the_schema_rejects_the_old_shapes() -> None:
    """The test can fail: strategy as a bare label (eval's old shape) does not validate."""
    run = {"strategy": "window k=2", "turns": 1}
    with pytest.raises(jsonschema.ValidationError):
        validator("run").validate(run)
    with pytest.raises(jsonschema.ValidationError):
        validator("tokenizer").validate({"name": "cl100k_base", "exact": "yes",
                                         "recorded": None, "note": None})


def test_a_recall_row_route_is_one_the_schema_names() -> None:
    """Every RecallRoute (a `sitting` one came after `neighbour`) is a route the schema
    accepts, and no other."""
    from chatmem.memory.reasons import RecallRoute

    routes = SCHEMA["$defs"]["context"]["properties"]["recall"]["items"]["properties"]["route"]
    assert set(routes["enum"]) == {r.value for r in RecallRoute}


def rejects(data: Any) -> bool:
    """True when the whole schema refuses `data`: it is not any documented output."""
    return not jsonschema.validators.validator_for(SCHEMA)(SCHEMA).is_valid(data)


@pytest.fixture
def chatted(tmp_path: Path) -> str:
    """A history file with one session `旅行` of three turns, chatted in Chinese (scripted)."""
    path = str(tmp_path / "h.db")
    result = invoke("chat", "旅行", "-s", "window+entity", "--provider", "scripted",
                    "--db", path,
                    input="我叫林。\n/remember city: 杭州\n我住在杭州。\n我喜欢喝龙井茶。\n")
    assert result.exit_code == 0, result.stderr
    return path


def test_sessions_copy(chatted: str, tmp_path: Path) -> None:
    """`sessions copy --json` between two history files is one of the schema's outputs."""
    target = str(tmp_path / "copy.db")
    copied = output("sessions", "copy", "--from", chatted, "--to", target)
    check("sessions_copy", copied)
    assert copied["sessions"] == ["旅行"] and copied["from"] == chatted
    assert copied["rows"]["messages"] == 6 and copied["rows"]["turns"] == 3
    shown = output("sessions", "show", "旅行", "--db", target)
    assert shown["messages"][-2]["content"] == "我喜欢喝龙井茶。"


def test_sessions_fork(chatted: str) -> None:
    """`sessions fork --json`, at a turn (derived state rebuilt) and whole (copied)."""
    early = output("sessions", "fork", "旅行", "旅行-早", "--at-turn", "1", "--db", chatted)
    check("sessions_fork", early)
    assert (early["source"], early["name"], early["at_turn"], early["source_turns"],
            early["messages"]) == ("旅行", "旅行-早", 1, 3, 2)
    assert [g["owner"] for g in early["rebuilt"]] == ["facts"] and early["stated_facts"] == 1
    whole = output("sessions", "fork", "旅行", "旅行-全", "--db", chatted)
    check("sessions_fork", whole)
    assert whole["at_turn"] == 3 and whole["rebuilt"] == []
    assert any(g["owner"] == "facts" and g["facts"] > 0 for g in whole["copied"])


def test_strategies(chatted: str) -> None:
    """`strategies --json` lists every strategy; `strategies A+B --json` explains each."""
    listed = output("strategies")
    check("strategies", listed)
    assert {"buffer", "window", "entity", "retrieval"} <= {s["name"] for s in listed}
    assert next(s for s in listed if s["name"] == "window")["parameters"] == {"k": 5}
    explained = output("strategies", "window+entity")
    check("strategy_help", explained)
    assert [s["name"] for s in explained] == ["window", "entity"]
    assert explained[0]["parameters"][0]["name"] == "window.k"
    assert explained[0]["parameters"][0]["takes"] == "a whole number, 0 or more"


def test_config_show(tmp_path: Path) -> None:
    """`config show --json`: every setting, its tables, where each came from; no secret."""
    config = tmp_path / "c.toml"
    config.write_text(
        'strategy = "window"\nretention_days = 30\nsystem = "请简短回答。"\n'
        '[local]\nthreads = 4\n[summary]\nprompt = "总结：{summary} 新的：{new_lines}"\n'
        '[strategies.window]\nk = 3\n[aliases]\n"快" = "scripted"\n'
        '[prices."scripted"]\ninput = 1\noutput = 2.5\ncurrency = "¥"\n'
        '[templates."旅行"]\nsystem = "你是导游。"\nmodel = "快"\n'
        '[templates."旅行".options]\ntemperature = 0.2\n', encoding="utf-8")
    env = {"OPENAI_BASE_URL": "http://ann:hunter2@llm.example/v1", "CHATMEM_KEY": "k"}
    result = invoke("config", "show", "--config", str(config), "--json", env=env)
    assert result.exit_code == 0, result.stderr
    assert "hunter2" not in result.stdout
    shown = json.loads(result.stdout)
    check("config_show", shown)
    assert shown["config_file"] == str(config) and shown["system"] == "请简短回答。"
    assert shown["aliases"] == {"快": "scripted"}
    assert shown["templates"]["旅行"]["options"] == {"temperature": 0.2}
    assert shown["history_key"] == "from $CHATMEM_KEY"
    assert shown["sources"]["base_url"] == "env OPENAI_BASE_URL"
    assert shown["sources"]["strategies.window.k"] == str(config)
    bare = invoke("config", "show", "--json", env={"CHATMEM_CONFIG": None})  # no file
    assert bare.exit_code == 0, bare.stderr
    defaults = json.loads(bare.stdout)
    check("config_show", defaults)
    assert defaults["config_file"] is None and defaults["templates"] == {}


def test_session_show_pages(chatted: str) -> None:
    """`sessions show --json` says which turns it shows and the session's retention."""
    shown = output("sessions", "show", "旅行", "--turns", "2-", "--db", chatted)
    check("session_show", shown)
    assert shown["turns"] == {"first": 2, "last": 3, "total": 3}
    assert shown["retention_days"] is None
    assert {m["turn"] for m in shown["messages"]} == {2, 3}
    assert shown["messages"][0]["content"] == "我住在杭州。"
    # the schema describes both fields: a page without them, or turns of another
    # shape, is no documented output
    for field in ("turns", "retention_days"):
        assert rejects({k: v for k, v in shown.items() if k != field}), field
    assert rejects({**shown, "turns": {"first": "2", "last": 3, "total": 3}})
    assert rejects({**shown, "turns": [2, 3]})


def test_inspect_replayed_is_null_outside_a_replay(chatted: str) -> None:
    """`replayed` is null for a recorded turn, for --next, and for a what-if built from
    the session's own kept state; an object only when a what-if replayed."""
    recorded = output("inspect", "旅行", "--turn", "2", "--db", chatted)
    check("inspect", recorded)
    assert recorded["mode"] == "turn" and recorded["replayed"] is None
    assert rejects({**recorded, "replayed": {"turns": 2, "strategy_model_calls": 0}})
    upcoming = output("inspect", "旅行", "--next", "我住在哪里？", "--db", chatted)
    check("inspect", upcoming)
    assert upcoming["mode"] == "next" and upcoming["replayed"] is None
    assert rejects({**upcoming, "replayed": {"turns": 3, "strategy_model_calls": 0}})
    own = output("inspect", "旅行", "--next", "我住在哪里？", "--param", "window.k=1",
                 "--db", chatted)
    check("inspect", own)
    assert own["mode"] == "what-if" and own["replayed"] is None
    replayed = output("inspect", "旅行", "--turn", "3", "-s", "entity", "--db", chatted)
    check("inspect", replayed)
    assert replayed["mode"] == "what-if" and replayed["replayed"]["turns"] >= 2


def test_sessions_import_of_a_transcript_and_of_an_archive(chatted: str, tmp_path: Path) -> None:
    """`sessions import --json`: the one session a transcript made (its name chosen from
    the file), and every session and fact an `export --all` archive restored."""
    db = str(tmp_path / "i.db")
    one = output("sessions", "import", str(SESSIONS / "travel-zh.jsonl"), "--db", db,
                 "--no-index")
    check("sessions_import", one)
    assert one["facts"] == 0 and [s["session"] for s in one["sessions"]] == ["travel-zh"]
    assert one["sessions"][0]["messages"] > 0 and one["sessions"][0]["probes"] == 7
    archive = tmp_path / "all.zip"
    exported = invoke("sessions", "export", "--all", "-o", str(archive), "--db", chatted)
    assert exported.exit_code == 0, exported.stderr
    restored = output("sessions", "import", str(archive), "--db", str(tmp_path / "r.db"),
                      "--no-index")
    check("sessions_import", restored)
    assert [(s["session"], s["messages"]) for s in restored["sessions"]] == [("旅行", 6)]
    assert restored["facts"] >= 1
    assert rejects({**restored, "facts": "1"})
    assert rejects({"sessions": [{**restored["sessions"][0], "probes": None}], "facts": 0})


def test_sessions_retention(chatted: str, tmp_path: Path) -> None:
    """`sessions retention --json`, shown and set, beside the config's default."""
    config = tmp_path / "c.toml"
    config.write_text("retention_days = 30\n", encoding="utf-8")
    shown = output("sessions", "retention", "旅行", "--db", chatted, "--config", str(config))
    check("sessions_retention", shown)
    assert shown == {"session": "旅行", "retention_days": None, "default_retention_days": 30}
    kept = output("sessions", "retention", "旅行", "forever", "--db", chatted)
    check("sessions_retention", kept)
    assert kept["retention_days"] == 0
    assert rejects({**kept, "retention_days": "forever"})


def test_forget_me_prints_the_prune_shape(chatted: str) -> None:
    """`forget-me --dry-run --json` is `sessions prune --json`'s shape, for one profile."""
    plan = output("forget-me", "--dry-run", "--db", chatted)
    check("prune", plan)
    assert plan["dry_run"] is True and [s["name"] for s in plan["sessions"]] == ["旅行"]


def test_admin_remove_user(pg_url: str) -> None:
    """`admin remove-user --dry-run --json` of a role that never was: nothing to erase."""
    plan = output("admin", "remove-user", "nobody_here", "--dry-run", "--db", pg_url)
    check("remove_user", plan)
    assert (plan["name"], plan["sessions"], plan["role"], plan["dry_run"]) == (
        "nobody_here", 0, "missing", True)
    assert rejects({**plan, "role": "gone"})


# Every command with a --json option, and the $defs entry its output is (some print one
# of two shapes: strategies NAME explains, inspect --summaries lists).
JSON_OUTPUTS = {
    "ask": ["ask"], "inspect": ["inspect", "summaries"], "replay": ["outcome"],
    "eval": ["outcome", "corpus"], "logs": ["logs"], "models": ["models"], "index": ["index"],
    "strategies": ["strategies", "strategy_help"], "config show": ["config_show"],
    "sessions list": ["sessions_list"], "sessions show": ["session_show"],
    "sessions prune": ["prune"], "sessions copy": ["sessions_copy"],
    "sessions fork": ["sessions_fork"], "sessions import": ["sessions_import"],
    "sessions retention": ["sessions_retention"], "facts list": ["facts_list"],
    "facts forget": ["purge_plan"], "forget-me": ["prune"], "admin remove-user": ["remove_user"],
}


def test_every_json_option_has_a_documented_shape() -> None:
    """A command that gains --json gains a $defs entry (and a line in docs/json.md)."""
    import typer.main

    from chatmem.cli import app

    def commands(group: Any, prefix: str = "") -> dict[str, Any]:
        """Every command under a Click group (Typer's own Click), by its full name."""
        found: dict[str, Any] = {}
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                found |= commands(command, f"{prefix}{name} ")
            else:
                found[prefix + name] = command
        return found

    root = typer.main.get_command(app)
    with_json = {name for name, command in commands(root).items()
                 if any("--json" in p.opts for p in command.params)}
    assert with_json == set(JSON_OUTPUTS)
    listed = {ref["$ref"].rsplit("/", 1)[1] for ref in SCHEMA["anyOf"]}
    assert {d for shapes in JSON_OUTPUTS.values() for d in shapes} <= listed
    opening = (ROOT / "docs" / "json.md").read_text(encoding="utf-8").split("\n\n")[1]
    for name in with_json:
        said = opening.replace("\n", " ")
        assert f"`{name}`" in said or f"`{name} -" in said, name
