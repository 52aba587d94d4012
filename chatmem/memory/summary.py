"""`summary`: a running summary (as a system part) + the new input.

Like ConversationSummaryMemory, but every update is a stored version with
the messages it covers, the drift guard pins literal details the summarizer
dropped, and a failed update leaves the turns raw in the context until a
later update catches up in one batched call.

`SummaryMemory` holds what `summary` and `summary-buffer` share: the state
they keep in the store, the summary and pinned-facts parts, and `fold`, the
one summarizer call of an update.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chatmem.errors import ChatmemError
from chatmem.memory import anchors, pins, summarize
from chatmem.memory.base import (
    BaseStrategy,
    Context,
    ContextRequest,
    HistoryTurn,
    MemoryEnv,
    Message,
    Param,
    Part,
    assemble,
    drop_leading_assistant,
    history_part,
    span,
)
from chatmem.tokens import TokenCounter

if TYPE_CHECKING:
    from chatmem.memory.state import SessionState
    from chatmem.store import SummaryRecord


@dataclass
class SummaryState:
    """A summary strategy's derived state, as stored for one session."""

    latest: SummaryRecord | None = None
    boundary: int = 0
    """The last turn folded into the summary: nothing at or before it is summarized again."""
    behind: str | None = None
    """Why the last update failed, while turns after `boundary` wait to be folded in."""
    pinned: dict[str, int] = field(default_factory=dict)
    """Drift-guard anchors → the summary version that dropped them."""
    pin_ids: dict[str, int | None] = field(default_factory=dict)
    """Drift-guard anchors → their pin id (p3 in /facts)."""
    unpinned: list[str] = field(default_factory=list)
    """Anchors the user unpinned: the drift guard never pins them again."""

    @property
    def text(self) -> str:
        return self.latest.text if self.latest else ""


def load_state(state: SessionState | None, strategy: str) -> SummaryState:
    """The stored state, or an empty one for a stateless build (replay, contract tests)."""
    if state is None:
        return SummaryState()
    values = state.get(strategy)
    return SummaryState(
        latest=state.store.latest_summary(state.session_id, strategy),
        boundary=int(values.get("boundary_turn", 0)),
        behind=values.get("behind") or None,
        pinned={a: v for a, v, _ in pins.parse_pinned(values.get(pins.PINNED_KEY))},
        pin_ids={a: n for a, _, n in pins.parse_pinned(values.get(pins.PINNED_KEY))},
        unpinned=[str(u) for u in values.get(pins.UNPINNED_KEY, [])],
    )


def summary_message(text: str, boundary: int, version: int, counter: TokenCounter) -> Message:
    content = f"Summary of the conversation so far ({_upto(boundary)}, v{version}):\n{text}"
    return Message("system", content, counter.count_message("system", content))


def _upto(turn: int) -> str:
    return "turn 1" if turn == 1 else f"turns 1–{turn}"


def facts_message(pinned: Mapping[str, int], counter: TokenCounter) -> Message:
    # A delimited data block: these are quotations from the conversation, not instructions.
    lines = "\n".join(f"- {anchor}" for anchor in pinned)
    content = f"Details from earlier turns, kept verbatim:\n<facts>\n{lines}\n</facts>"
    return Message("system", content, counter.count_message("system", content))


def pinned_reason(pinned: Mapping[str, int]) -> str:
    versions = sorted(set(pinned.values()))
    which = ", ".join(f"v{v}" for v in versions)
    return f"kept verbatim: dropped by summary {which}"


class SummaryMemory(BaseStrategy):
    """Shared state, parts and summarizer call of the summary strategies."""

    def memory_parts(
        self, st: SummaryState, counter: TokenCounter, room: int | None = None
    ) -> tuple[list[Part], list[str]]:
        """The summary and pinned-facts parts, fitted to `room` tokens when given.

        A summary that does not fit is clipped with a visible marker; pinned
        facts that do not fit are left out, newest first. Both are reported.
        """
        parts: list[Part] = []
        notes: list[str] = []
        left = room
        if st.latest is not None:
            reason = (f"summary v{st.latest.version} of {_upto(st.boundary)}"
                      f" ({st.latest.model or 'unknown model'})")
            full = summary_message(st.text, st.boundary, st.latest.version, counter)
            message: Message | None = full
            if left is not None and full.tokens > left:
                framing = summary_message("", st.boundary, st.latest.version, counter).tokens
                allowed = left - framing
                marker = counter.count_text(summarize.clip_marker(max(allowed, 0)))
                fitted = None
                while allowed > marker and fitted is None:
                    text, _ = summarize.clip(st.text, allowed, counter)
                    candidate = summary_message(text, st.boundary, st.latest.version, counter)
                    if candidate.tokens <= left:
                        fitted = candidate
                    else:  # tokens can merge across the framing: try a little shorter
                        allowed -= candidate.tokens - left
                if fitted is not None:
                    message = fitted
                    reason += f"; clipped to {allowed} tokens to fit the budget"
                    notes.append(f"summary v{st.latest.version} clipped to fit the budget")
                else:
                    message = None
                    notes.append(f"summary v{st.latest.version} left out: no room in the budget")
            if message is not None:
                parts.append(Part("summary", (message,), reason))
                left = None if left is None else left - message.tokens
        if st.pinned:
            pinned = dict(st.pinned)
            while pinned and left is not None and facts_message(pinned, counter).tokens > left:
                pinned.popitem()
            if len(pinned) < len(st.pinned):
                notes.append(f"{len(st.pinned) - len(pinned)} pinned facts left out to fit")
            if pinned:
                parts.append(Part("facts", (facts_message(pinned, counter),),
                                  pinned_reason(pinned)))
        return parts, notes

    def summary_limit(self) -> int:
        """Longest summary text, in tokens; longer replies are clipped with a marker."""
        return int(self.params["summary_max_tokens"])

    def summary_cost(self, counter: TokenCounter) -> int:
        """Most tokens the summary part can take: the clipped text and its framing."""
        return self.summary_limit() + summary_message(
            "", 10**6, 10**6, counter).tokens

    def fold(
        self, env: MemoryEnv, st: SummaryState, turns: Sequence[HistoryTurn]
    ) -> list[str]:
        """Fold `turns` into the summary with one call; on failure, record being behind."""
        if not turns or env.state is None:
            return []
        messages = [m for t in turns for m in t.messages]
        options = _options(env)
        covered = span([t.number for t in turns])
        try:
            if env.model is None:
                raise ChatmemError("no model is configured for summaries")
            draft = summarize.summarize(
                env.model, env.counter, st.text, messages,
                prompt=options["prompt"], max_tokens=self.summary_limit(),
            )
        except ChatmemError as e:
            env.state.set(self.name, behind=str(e))
            verb = "stays" if len(turns) == 1 else "stay"
            return [f"summary is behind ({e}); {covered} {verb} in the context unsummarized,"
                    " the next turn catches up"]
        candidates = anchors.anchors_of([st.text, *(m.content for m in messages)])
        dropped = anchors.missing_anchors(candidates, draft.text)
        version = (st.latest.version if st.latest else 0) + 1
        pinned = {a: v for a, v in st.pinned.items() if not anchors.present(a, draft.text)}
        if options["drift_guard"]:
            for anchor in dropped:
                if not pins.is_unpinned(st.unpinned, anchor):
                    pinned.setdefault(anchor, version)
        ids = {a: st.pin_ids.get(a) for a in pinned}
        fresh = [a for a, n in ids.items() if n is None]
        ids.update(zip(fresh, pins.allocate_ids(env.state.store, env.state.session_id,
                                                len(fresh)), strict=True))
        record = env.state.store.add_summary(
            env.state.session_id, self.name, draft.text,
            covered_ids=[m.id for m in messages if m.id is not None],
            anchors=anchors.extract_anchors(draft.text), dropped_anchors=dropped,
            model=draft.model,
        )
        env.state.set(self.name, boundary_turn=turns[-1].number, behind="",
                      pinned=[[a, v, ids[a]] for a, v in pinned.items()])
        added, removed = summarize.diff_size(st.text, draft.text)
        unit = summarize.diff_unit(st.text, draft.text)
        notice = (f"summary v{record.version} now covers {_upto(turns[-1].number)}:"
                  f" +{added} −{removed} {unit}; /summary shows the diff")
        if draft.clipped:
            notice += f"; clipped to {self.summary_limit()} tokens"
        if not options["drift_guard"]:
            groups = [("not pinned (drift_guard off)", dropped)]
        else:
            groups = [("pinned", [a for a in dropped if a in pinned]),
                      ("not pinned (you unpinned them)", [a for a in dropped if a not in pinned])]
        for kept, group in groups:
            if group:
                shown = ", ".join(group[:3]) + (" …" if len(group) > 3 else "")
                notice += f"; dropped by the summarizer, {kept}: {shown}"
        return [notice]


def _options(env: MemoryEnv) -> dict[str, Any]:
    """The [summary] settings (prompt, drift_guard) the engine was given, or the defaults."""
    configured = (env.settings.summary if env.settings else None) or {}
    prompt = configured.get("prompt") or summarize.DEFAULT_PROMPT
    return {
        "prompt": summarize.check_prompt(prompt),
        "drift_guard": bool(configured.get("drift_guard", True)),
    }


class SummaryStrategy(SummaryMemory):
    name = "summary"
    description = "Send a running summary of all earlier turns (updated every turn) + the input."
    PARAMS = (
        Param("summary_max_tokens", int, 256, "longest summary kept; longer ones are clipped",
              minimum=16),
    )

    def build(self, request: ContextRequest) -> Context:
        st = load_state(request.state, self.name)
        # Turns not yet folded in (a failed or not-yet-run update) are sent raw:
        # the summary strategy never loses a turn, it only delays compressing it.
        pending = drop_leading_assistant(
            request.history.turns(st.boundary + 1, request.history.turn_count()))
        parts, _ = self.memory_parts(st, request.counter)
        warnings = []
        if pending:
            why = f"summary behind: {st.behind}" if st.behind else "not yet summarized"
            part = history_part(pending, f"{span([t.number for t in pending])} ({why})")
            if part:
                parts.append(part)
            if st.behind:
                warnings.append(f"summary is behind; {span([t.number for t in pending])} sent raw")
        return assemble(request, parts, budget=request.budget, warnings=warnings)

    def update(self, env: MemoryEnv) -> list[str]:
        st = load_state(env.state, self.name)
        turns = env.history.turns(st.boundary + 1, env.history.turn_count())
        return self.fold(env, st, turns)
