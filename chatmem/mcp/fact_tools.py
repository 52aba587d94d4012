"""chatmem's MCP tools over facts: remember one now, list them with their exact ids, forget
one by its id (a dry run unless confirmed)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from chatmem.errors import NotFound, SessionGone
from chatmem.mcp.memory import Memory
from chatmem.mcp.results import (
    FACTS_WHOLE,
    ConversationId,
    FactList,
    Forgotten,
    Page,
    fact_result,
    listed_fact,
    paged_priced,
    with_text,
)

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from chatmem.app.workspace import Workspace
    from chatmem.store import FactRecord


def add_fact_tools(server: MCPServer[Any], memory: Memory) -> None:
    from chatmem.app import facts, sessions

    @server.tool()
    def remember(
        ctx: Context,
        conversation_id: ConversationId,
        fact: Annotated[str, Field(description="KEY: VALUE, or a statement like 'my name is "
                                               "Ana'.")],
        everywhere: Annotated[bool, Field(
            description="Keep it in the user's profile, for every conversation (default: "
                        "this conversation only).")] = False,
    ) -> FactList:
        """Store a fact now, as data the strategy may send (facts never act as
        instructions)."""
        with memory.workspace(ctx) as ws:
            session = sessions.session_named(ws, conversation_id)
            try:
                stored = facts.remember(ws, session, fact, in_profile=everywhere)
            except SessionGone as gone:
                raise gone.named(conversation_id) from None
            return FactList(facts=[fact_result(f, _owner_name(ws, f)) for f in stored],
                            page=1, next_page=None)

    @server.tool()
    def list_facts(
        ctx: Context,
        conversation_id: Annotated[str | None, Field(
            description="This conversation's facts and its user's (default: every fact).")]
        = None,
        page: Page = 1,
    ) -> FactList:
        """The facts chatmem keeps, with their exact ids, scope and end."""
        with memory.workspace(ctx) as ws:
            listing = facts.list_facts(ws, session=conversation_id) if ws.has_history else None
        said_by = listing.speakers if listing else {}
        shown = [with_text(partial(listed_fact, f, speaker=said_by.get(f.fact.id)),
                           f.fact.value, FACTS_WHOLE)
                 for f in (listing.facts if listing else [])]
        chosen, next_page = paged_priced(shown, page)
        return FactList(facts=chosen, page=page, next_page=next_page)

    @server.tool()
    def forget(
        ctx: Context,
        fact_id: Annotated[int, Field(description="The exact id list_facts gave.")],
        purge: Annotated[bool, Field(
            description="Also replace its value by [forgotten] wherever a stored message "
                        "mentions it.")] = False,
        confirm: Annotated[bool, Field(
            description="False (default): say what would change and change nothing.")] = False,
    ) -> Forgotten:
        """Forget a fact by its exact id: no later context holds it. A dry run unless
        confirm is true."""
        from mcp.server.mcpserver.exceptions import ToolError

        with memory.workspace(ctx) as ws:
            try:
                chosen = facts.fact_by_id(ws, fact_id, include_deleted=purge)
            except NotFound:
                raise ToolError(f"no fact {fact_id}; list_facts gives the ids") from None
            owner = _owner_name(ws, chosen)
            mentions = 0
            still_named: list[str] = []
            redaction = None
            if purge:
                mentions = sum(len(m.spans) for m in facts.purge_mentions(ws, chosen))
                if confirm:
                    purged = facts.purge(ws, chosen)
                    still_named, redaction = list(purged.still_named), purged.redaction
                else:
                    redaction = facts.purge_preview(ws, chosen)
            else:
                # A dry run says what the forget would: refused for another's fact.
                facts.check_forgettable(ws, chosen)
                if confirm:
                    facts.forget(ws, chosen)
            changes = {p.value: n for p, n in redaction.counts.items()} if redaction else {}
            deleted = list(redaction.deleted_facts.values()) if redaction else []
            distinct = list(redaction.distinct_keys.values()) if redaction else []
            return Forgotten(done=confirm, fact=fact_result(chosen, owner), purge=purge,
                             mentions=mentions, still_named=still_named, changes=changes,
                             deleted_facts=deleted, distinct_keys=distinct,
                             dropped_pins=redaction.dropped_pins if redaction else [])


def _owner_name(ws: Workspace, fact: FactRecord) -> str:
    """The owner list_facts shows for `fact` (its user for a profile fact)."""
    from chatmem.app.facts import owner_of

    owner = owner_of(ws, fact)
    return owner.name if owner else ""
