"""Every --json output validates against docs/chatmem.schema.json (described in docs/json.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
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
    assert plan and all(m["content"][a:b] == "Ada" for m in plan for a, b in m["mentions"])


def test_ask(db: str) -> None:
    asked = output("ask", "e", "我的城市是哪里？", "--db", db, "--provider", "scripted")
    check("ask", asked)
    assert asked["session"] == "e" and set(asked["tokens"]["parts"]) >= {"facts", "input"}


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
