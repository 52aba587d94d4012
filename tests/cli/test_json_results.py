"""What a script needs from `sessions import`, `sessions retention` and `forget-me
--dry-run` comes as --json, not only in a sentence on stderr."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import run

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"


def test_import_without_a_name_says_the_chosen_name_in_json(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    result = run(db, "sessions", "import", str(SESSIONS / "travel-zh.jsonl"), "--json",
                 "--no-index", code=0)
    [one] = json.loads(result.stdout)["sessions"]
    listed = json.loads(run(db, "sessions", "list", "--json", code=0).stdout)
    assert [s["name"] for s in listed] == [one["session"]]
    assert one["messages"] == listed[0]["messages"] > 0


def test_retention_shows_as_json(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    run(db, "ask", "旅行", "我们去杭州", "--provider", "scripted", code=0)
    shown = json.loads(run(db, "sessions", "retention", "旅行", "--json", code=0).stdout)
    assert shown == {"session": "旅行", "retention_days": None, "default_retention_days": None}
    run(db, "sessions", "retention", "旅行", "forever", code=0)
    assert json.loads(run(db, "sessions", "retention", "旅行", "--json",
                          code=0).stdout)["retention_days"] == 0


def test_forget_me_dry_run_lists_as_prune_does(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    run(db, "ask", "trip", "hello", "--provider", "scripted", code=0)
    planned = json.loads(run(db, "forget-me", "--dry-run", "--json", code=0).stdout)
    assert planned["dry_run"] is True and [s["name"] for s in planned["sessions"]] == ["trip"]
    assert run(db, "forget-me", "--json", code=2).stderr.startswith(
        "error: --json needs --yes or --dry-run")
    erased = json.loads(run(db, "forget-me", "--yes", "--json", code=0).stdout)
    assert erased["dry_run"] is False and [s["name"] for s in erased["sessions"]] == ["trip"]
    assert json.loads(run(db, "sessions", "list", "--json", code=0).stdout) == []
