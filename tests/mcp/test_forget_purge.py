"""The MCP `forget` tool's purge tells what `chatmem facts forget --purge` tells: the sessions
whose name still holds the erased value (a purge leaves names as they are)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_runner import chat, invoke

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")

from mcp import ClientSession
from test_mcp_server import call, with_client

from chatmem.store import Store


def test_a_purge_names_the_sessions_still_named_with_the_value_as_the_cli_does(
        tmp_path: Path) -> None:
    by_mcp, by_cli = tmp_path / "mcp.db", tmp_path / "cli.db"

    async def purge(session: ClientSession) -> tuple[dict[str, Any], dict[str, Any]]:
        await call(session, "start_conversation", name="杭州-行程")
        await call(session, "start_conversation", name="上海-周末")
        kept = await call(session, "remember", conversation_id="杭州-行程",
                          fact="city: 杭州", everywhere=True)
        fact_id = kept["facts"][0]["id"]
        dry = await call(session, "forget", fact_id=fact_id, purge=True)
        done = await call(session, "forget", fact_id=fact_id, purge=True, confirm=True)
        return dry, done

    dry, done = with_client(by_mcp, purge)
    assert (dry["done"], dry["still_named"]) == (False, [])  # a dry run tells what it counts
    assert (done["done"], done["purge"], done["still_named"]) == (True, True, ["杭州-行程"])
    with Store(by_mcp) as store:
        assert store.facts.facts(include_deleted=True) == []

    assert chat(by_cli, "杭州-行程", ["/remember city: 杭州"]).exit_code == 0
    told = invoke("facts", "forget", "杭州-行程", "city", "--purge", "--yes",
                  "--db", str(by_cli), code=0).stderr
    assert told.splitlines()[-1] == (
        "still in the name of session 杭州-行程: a purge leaves names as they are; "
        "`chatmem sessions rename 杭州-行程 NEW` renames it")


def test_a_dry_run_counts_every_place_the_purge_then_changes(tmp_path: Path) -> None:
    """Not only message mentions: the other fact whose whole value it was (deleted, not kept
    as [forgotten]) and the turns' records, as the purge then reports them."""

    async def purge(session: ClientSession) -> tuple[dict[str, Any], dict[str, Any]]:
        await call(session, "start_conversation", name="sp")
        kept = await call(session, "remember", conversation_id="sp", fact="name: Zebulon")
        await call(session, "remember", conversation_id="sp", fact="nick: Zebulon")
        await call(session, "record_turn", conversation_id="sp", user="Zebulon here",
                   assistant="Hello Zebulon")
        fact_id = kept["facts"][0]["id"]
        dry = await call(session, "forget", fact_id=fact_id, purge=True)
        done = await call(session, "forget", fact_id=fact_id, purge=True, confirm=True)
        return dry, done

    dry, done = with_client(tmp_path / "h.db", purge)
    assert dry["mentions"] == 2 and dry["changes"]["messages"] == 2
    assert (dry["changes"], dry["deleted_facts"]) == (done["changes"], done["deleted_facts"])
    assert done["deleted_facts"] == ["nick"] and done["changes"]["facts_deleted"] == 1
    with Store(tmp_path / "h.db") as store:
        assert store.facts.facts(include_deleted=True) == []
