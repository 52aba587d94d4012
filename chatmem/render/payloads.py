"""The JSON documents the front ends print or serve (`--json`, the MCP server, the HTTP
proxy): one shape per outcome, worded where a person reads it (docs/json.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields as dataclass_fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from chatmem.app.inspection import Inspection
    from chatmem.app.session_files import Imported
    from chatmem.app.summaries import SummaryVersion
    from chatmem.history_notices import RestoredPastRetention
    from chatmem.store import SessionSummary, TurnRecord
    from chatmem.store.records import SessionAccess
    from chatmem.store.sharing import Share

TURN_FIELDS = ("number", "status", "error", "input", "reply", "provider", "model", "tokenizer",
               "estimated_tokens", "prompt_tokens", "completion_tokens", "latency_ms",
               "created_at", "superseded_by")


def strategy_json(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """A strategy in every --json output: {name, params, label} (docs/chatmem.schema.json)."""
    from chatmem.memory.params import strategy_label

    return {"name": name, "params": dict(params), "label": strategy_label(name, params)}


def session_summary_json(session: SessionSummary) -> dict[str, Any]:
    """`sessions list --json`: one session, its fields in the query's order, with its strategy
    as everywhere (params inside it)."""
    columns = {f.name: getattr(session, f.name) for f in dataclass_fields(session)}
    del columns["params"], columns["id"]  # a PostgreSQL id is random, and names nothing
    return {**columns, "strategy": strategy_json(session.strategy, session.params)}


def sharing_json(access: SessionAccess, shares: list[Share] | None) -> dict[str, Any]:
    """`sessions show --json`: the user's `access` (own, write, read), the owner who shared
    it with them (`shared_by`, null for their own), and whom their own is shared with
    (`shared_with`: [{grantee, mode}], [] in a file; null for one shared with them)."""
    from chatmem.store.records import AccessLevel

    return {"access": access.level.value,
            "shared_by": None if access.level is AccessLevel.OWN else access.owner,
            "shared_with": None if shares is None else [
                {"grantee": s.grantee, "mode": s.mode.value} for s in shares]}


def turn_json(turn: TurnRecord) -> dict[str, Any]:
    # `number` is the conversation's turn (as sessions show and fork --at-turn count);
    # `request` the request's own order in the session, which `superseded_by` names.
    return {**{k: getattr(turn, k) for k in TURN_FIELDS}, "number": turn.turn,
            "request": turn.number,
            "strategy": strategy_json(turn.strategy, turn.params),
            "tokens": tokens_json(turn.estimated_tokens, turn.prompt_tokens,
                                  turn.completion_tokens)}


def tokens_json(counted: int | None, reported: int | None,
                reply: int | None) -> dict[str, int | None]:
    """A stored turn's counts under the keys that mean one thing in every output: `counted`
    is chatmem's count of the request, `reported` the provider's (None: it reported none)."""
    return {"counted": counted, "reported": reported, "reply": reply}


def inspection_json(inspection: Inspection) -> dict[str, Any]:
    """`inspect --json`: the context with reasons, notes and warnings as the user reads them
    (the stored turn keeps values)."""
    from chatmem.render.notices import notice_text
    from chatmem.render.reasons import dropped_text, reason_text, verdict_text

    context, turn = inspection.context, inspection.turn
    stored = context.to_json()
    texts = inspection.recall_texts
    replayed = inspection.replayed
    outside = inspection.external_ids
    return {
        "command": "inspect",
        "session": inspection.address or inspection.session.name,
        "mode": str(inspection.mode),
        "turn": turn_json(turn) if turn else None,
        "history_turn": inspection.history_turn,
        "strategy": strategy_json(inspection.strategy, inspection.params),
        "tokenizer": inspection.tokenizer.to_json(),
        "input": inspection.text,
        "speaker": inspection.speaker,
        "context": {**stored,
                    "dropped": dropped_text(context.dropped) or None,
                    "warnings": [notice_text(w) for w in context.warnings],
                    "parts": [{**part, "reason": reason_text(p.reason),
                               "messages": [{**m, "external_id": outside.get(m["id"])}
                                            for m in part["messages"]]}
                              for part, p in zip(stored["parts"], context.parts, strict=True)],
                    **({"recall": [{**row, "why": verdict_text(row), "text": _text_of(row, texts)}
                                   for row in context.recall]}
                       if context.recall else {})},
        "messages": context.messages(),
        "rendered_prompt": turn.rendered_prompt if turn else None,
        "replayed": {"turns": replayed.turns,
                     "strategy_model_calls": replayed.strategy_model_calls}
        if replayed else None,
        "notices": [notice_text(n) for n in inspection.notices],
    }


def _text_of(row: Mapping[str, Any], texts: Mapping[int, str]) -> str | None:
    # A plugin's row stored before rows were checked may lack an id or hold a list there.
    found = row.get("id")
    return texts.get(found) if isinstance(found, int) else None


def summaries_json(address: str, versions: list[SummaryVersion]) -> dict[str, Any]:
    """`inspect --summaries --json`: `address` names the session (OWNER/NAME for another's,
    as `inspect --json` does)."""
    return {"command": "inspect", "mode": "summaries", "session": address,
            "summaries": [summary_row(v) for v in versions]}


def summary_row(version: SummaryVersion) -> dict[str, Any]:
    s = version.summary
    return {"version": s.version, "strategy": s.strategy, "created_at": s.created_at,
            "covered_messages": len(s.covered_ids), "covered_turn": version.covered_turn,
            "tokens": version.tokens, "anchors": s.anchors,
            "dropped_anchors": s.dropped_anchors, "model": s.model, "text": s.text}


def imported_json(imported: Sequence[Imported], facts: int,
                  past_retention: RestoredPastRetention | None = None) -> dict[str, Any]:
    """`sessions import --json`: a transcript's one session or an archive's every one, each
    with `past_retention` (idle days and retention) when it came back already past it."""
    idle = {} if past_retention is None else {s.name: s for s in past_retention.sessions}

    def past(name: str) -> dict[str, float] | None:
        one = idle.get(name)
        return None if one is None else {"idle_days": round(one.idle_days, 3),
                                         "retention_days": one.keep_days}

    return {"sessions": [{"session": one.session.name, "user": one.session.user,
                          "messages": one.messages, "probes": one.probes,
                          "past_retention": past(one.session.name)} for one in imported],
            "facts": facts}
