"""What the summary strategies (`summary`, `summary-buffer`) share: `SummaryMemory`, with
the summary and pinned-facts parts and `fold`, the one summarizer call of an update.

Every update is a stored version with the messages it covers, the drift guard pins
literal details the summarizer dropped, and a failed update leaves the turns raw in the
context until a later update catches up in batched calls. The state they keep in the
store is chatmem.memory.summary_state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

from chatmem.activity import ActivityStep, Work
from chatmem.config.schema import check_prompt
from chatmem.config.sections import SummarySection
from chatmem.context_warnings import SummaryBehind
from chatmem.errors import ChatmemError
from chatmem.memory import anchors, pins, quoting, sensitive_turns, summarizer
from chatmem.memory.assembly import span
from chatmem.memory.base import BaseStrategy, MemoryEnv, catching_up
from chatmem.memory.context import Message, Part
from chatmem.memory.history_view import HistoryTurn, HistoryView
from chatmem.memory.pin_block import PinCost, facts_text, fit_pins
from chatmem.memory.pin_quotes import first_quotes
from chatmem.memory.reasons import (
    DroppedNote,
    PinnedDetails,
    PinsLeftOut,
    PinsReleased,
    SummaryClipped,
    SummaryLeftOut,
    SummaryVersion,
)
from chatmem.memory.replaced_values import mark_replaced
from chatmem.memory.said_values import said_in
from chatmem.memory.summary_state import SummaryState, load_state, moved
from chatmem.notices import (
    DerivedMemory,
    ErasedWhileUpdating,
    Notice,
    SummaryFailed,
    SummaryUpdated,
    after_calls,
)
from chatmem.privacy import sensitive
from chatmem.reasoning import without_reasoning
from chatmem.tokens import TokenCounter

FOLD_TOKENS = 2000
"""Turns one summarizer call folds in, at most, in tokens: a catch-up of a long imported
history is many bounded calls, each of a size any model's context holds."""
BATCH_PAGE_TURNS = 64
QUOTE_LOOKBACK_TURNS = 256
"""How far back before the turns just folded the drift guard looks for where a dropped
detail of the old summary was said, to quote it."""
QUOTE_PAGE_TURNS = 32


def summary_message(text: str, boundary: int, version: int, counter: TokenCounter) -> Message:
    # Data, not instructions: a summary is written from what the user said.
    content = quoting.summary_block(text, _upto(boundary), version)
    return Message.counted("system", content, counter)


def _upto(turn: int) -> str:
    return span(range(1, turn + 1))


def facts_message(pinned: Sequence[pins.Pin], counter: TokenCounter) -> Message:
    # Counted from its lines' cached counts (exactly the whole text's count, see PinCost).
    return Message("system", facts_text(pinned), PinCost(counter)(pinned))


def pinned_reason(pinned: Sequence[pins.Pin]) -> PinnedDetails:
    return PinnedDetails(tuple(sorted({p.version for p in pinned})))


class SummaryLimit(Protocol):
    """What every summary strategy's parameters have: the longest summary kept."""

    @property
    def summary_max_tokens(self) -> int: ...


Limited = TypeVar("Limited", bound=SummaryLimit)


class SummaryMemory(BaseStrategy[Limited]):
    """Shared state, parts and summarizer call of the summary strategies."""

    keeps_state = True
    calls_helper = True
    summarizes = True

    def memory_parts(
        self, st: SummaryState, counter: TokenCounter, room: int | None = None,
        keep_free: int = 0,
    ) -> tuple[list[Part], list[DroppedNote]]:
        """The summary and pinned-facts parts, fitted to `room` tokens when given.

        A summary that does not fit is clipped with a visible marker. Pins get
        at most `pin_limit()` tokens and never the last `keep_free` tokens of
        the room (the newest turn outranks them); the oldest are left out
        first. Both are reported in the notes.
        """
        parts: list[Part] = []
        notes: list[DroppedNote] = []
        left = room
        if st.latest is not None:
            reason = SummaryVersion(st.latest.version, st.boundary, st.latest.model)
            full = summary_message(st.text, st.boundary, st.latest.version, counter)
            message: Message | None = full
            if left is not None and full.tokens > left:
                framing = summary_message("", st.boundary, st.latest.version, counter).tokens
                allowed = left - framing
                marker = counter.count_text(summarizer.clip_marker(max(allowed, 0)))
                fitted = None
                while allowed > marker and fitted is None:
                    text, _ = summarizer.clip(st.text, allowed, counter)
                    candidate = summary_message(text, st.boundary, st.latest.version, counter)
                    if candidate.tokens <= left:
                        fitted = candidate
                    else:  # tokens can merge across the framing: try a little shorter
                        allowed -= candidate.tokens - left
                if fitted is not None:
                    message = fitted
                    reason = replace(reason, clipped_to=allowed)
                    notes.append(SummaryClipped(st.latest.version))
                else:
                    message = None
                    notes.append(SummaryLeftOut(st.latest.version))
            if message is not None:
                parts.append(Part("summary", (message,), reason))
                left = None if left is None else left - message.tokens
        limit = self.pin_limit()
        if left is not None:
            limit = min(limit, left - keep_free)
        # A quote that repeats a text the user unpinned would send it after all.
        shown = [replace(p, quote="") if any(anchors.present(u, p.quote) for u in st.unpinned)
                 else p for p in st.pins]
        kept, left_out = fit_pins(shown, limit, PinCost(counter))
        if left_out:
            notes.append(PinsLeftOut(len(left_out)))
        if st.released:
            notes.append(PinsReleased(st.released, self.pin_limit()))
        if kept:
            parts.append(Part("facts", (facts_message(kept, counter),), pinned_reason(kept)))
        return parts, notes

    def next_fold(self, env: MemoryEnv, st: SummaryState) -> list[HistoryTurn]:
        """The turns the next summarizer call folds, oldest first; none when none need to."""
        raise NotImplementedError

    def update(self, env: MemoryEnv) -> list[Notice]:
        """Fold what `next_fold` names: one call after a turn, bounded batches in a catch-up
        (an imported history) until nothing is left to fold or a call fails."""
        if env.model is None:
            return []  # nothing can summarize: turns stay unsummarized, none lost
        notices: list[Notice] = []
        folds = 0
        with env.state.checking_itself():  # each fold checks the erasures it read (_fold)
            while True:
                seen = env.state.erasures()  # before the summary and the turns it folds are read
                st = load_state(env.state, self.name)
                if folds and st.behind:
                    break
                turns = self.next_fold(env, st)
                if not turns:
                    if st.behind:
                        env.state.set_covering(self.name, st.boundary, behind="")  # none waits
                    break
                notices = self.fold(env, st, turns, seen=seen)
                folds += 1
                if not env.catch_up or any(isinstance(n, ErasedWhileUpdating) for n in notices):
                    break
        return after_calls(notices, folds)

    def summary_limit(self) -> int:
        """Longest summary text, in tokens; longer replies are clipped with a marker."""
        return self.options.summary_max_tokens

    def pin_limit(self) -> int:
        """Most tokens the pinned-facts part may take; older pins are released beyond it."""
        return self.summary_limit()

    def fold_limit(self) -> int:
        """Most tokens of turns one summarizer call folds in (a catch-up takes several)."""
        return FOLD_TOKENS

    def summary_cost(self, counter: TokenCounter) -> int:
        """Most tokens the summary part can take: the clipped text and its framing."""
        return self.summary_limit() + summary_message(
            "", 10**6, 10**6, counter).tokens

    def fold(
        self, env: MemoryEnv, st: SummaryState, turns: Sequence[HistoryTurn], *,
        seen: int | None = None,
    ) -> list[Notice]:
        """Fold `turns` into the summary with one call; on failure, record being behind.

        `seen`: the session's erasure count (SessionState.erasures) read before `st` and
        `turns` were; when text left its memory since, nothing is stored (default: read now).
        """
        if not turns:
            return []
        if seen is None:
            seen = env.state.erasures()
        # The step is the whole fold: in a long catch-up the secret guard, the drift
        # guard's anchors and pins and the diff take as long as the call itself.
        with env.activity.doing(ActivityStep(
                Work.SUMMARIZING, turns[0].number, turns[-1].number,
                of=catching_up(env, env.history.turn_count()))), env.state.checking_itself():
            return self._fold(env, st, turns, seen)

    def _fold(
        self, env: MemoryEnv, st: SummaryState, turns: Sequence[HistoryTurn], seen: int | None,
    ) -> list[Notice]:
        messages = [m for t in turns for m in t.messages]
        # What these turns say that is sensitive, and every value earlier turns found,
        # whoever repeats it, is masked before the summarizer or the drift guard sees it.
        note = sensitive_turns.noted(env.state)
        guard, masked = sensitive_turns.guard_for(env.state, turns, note)
        sensitive_turns.remember(env.state, guard, turns, note)
        # A reply's reasoning is the model thinking aloud, not what it said: folded in, its
        # guesses (another order id, a date it wondered about) were pinned as the turn's.
        messages = [replace(m, content=without_reasoning(m.content))
                    if m.role == "assistant" else m for m in messages]
        masked = [without_reasoning(text) if m.role == "assistant" else text
                  for m, text in zip(messages, masked, strict=True)]
        configured = env.settings.summary if env.settings else SummarySection()
        prompt = check_prompt(configured.prompt or summarizer.DEFAULT_PROMPT)
        try:
            if env.model is None:
                raise ChatmemError("no model is configured for summaries")
            draft = summarizer.summarize(
                env.model, env.counter, guard.mask(st.text), messages,
                prompt=prompt, max_tokens=self.summary_limit(), mask=guard.mask,
            )
        except ChatmemError as e:
            env.state.set_covering(self.name, st.boundary, behind=str(e))
            return [SummaryFailed(str(e), tuple(t.number for t in turns))]
        # Sensitive details are never anchors: pinning one would remember it unasked.
        said = masked
        candidates = anchors.anchors_of([guard.mask(st.text), *said])
        dropped = anchors.missing_anchors(candidates, draft.text)
        # The reverse is said, not hidden: a detail the summarizer wrote that nothing folded
        # says (a guess, an answer to the user) is memory no one stated.
        # Said in any form a fact's value may take ($1,000 for $1000, 两个 for 2).
        folded = ["\n".join([guard.mask(st.text), *said])]
        unsaid = [a for a in dict.fromkeys(anchors.extract_anchors(
            summarizer.strip_clip_marker(draft.text))) if not said_in(a, folded)]
        version = (st.latest.version if st.latest else 0) + 1
        store, session_id = env.state.store, env.state.session_id
        # A pin holding a value found sensitive since is let go, and quotes are masked.
        held = [replace(p, quote=guard.mask(p.quote)) for p in st.pins
                if not anchors.present(p.text, draft.text) and not guard.holds(p.text)]
        if st.rebuilt:  # bare: where each was said is looked for as for an older anchor
            found = self._said_before(env, st, [p.text for p in held if p.turn is None
                                                and not p.quote], guard.mask, latest=False)
            held = [replace(p, turn=found[p.text][0], quote=found[p.text][1])
                    if p.text in found else p for p in held]
        refused = [a for a in dropped if pins.is_unpinned(st.unpinned, a)]
        taken = {*refused, *(p.text for p in held)}
        new = [a for a in dropped if a not in taken]
        if not configured.drift_guard:
            new = []
        sources = self._sources(env, st, new, [(m.turn, text) for m, text in zip(
            messages, masked, strict=True)], guard.mask)
        candidates_pins = held + [pins.Pin(a, version, None, *sources.get(a, (None, "")))
                                  for a in new]
        candidates_pins = mark_replaced(candidates_pins, [
            (m.turn, text) for m, text in zip(messages, masked, strict=True)])
        _, released = fit_pins(candidates_pins, self.pin_limit(), PinCost(env.counter))
        # Released pins are always the oldest; the rest are stored with their quotes,
        # even those shown bare now, so a roomier build can quote them again.
        kept = candidates_pins[len(released):]
        # One transaction, taken only if no other process folded these turns while
        # the summarizer was busy: the version and its boundary move together, and
        # no turn is ever folded into two versions. Nor is it taken after a purge since
        # the summary and the turns were read: the draft may hold what it erased; the
        # boundary stays, so the next update folds them again as they read now.
        with store.write():
            if env.state.erased_since(seen):
                return [ErasedWhileUpdating(DerivedMemory.SUMMARY, turns[0].number,
                                            turns[-1].number)]
            now = load_state(env.state, self.name)
            if moved(now, st):
                return []
            # A pin the user removed while the summarizer was busy stays removed.
            kept = [p for p in kept if not pins.is_unpinned(now.unpinned, p.text)]
            fresh = iter(pins.allocate_ids(store, session_id,
                                           sum(1 for p in kept if p.pin_id is None)))
            kept = [p if p.pin_id is not None else replace(p, pin_id=next(fresh))
                    for p in kept]
            record = store.memory.add_summary(
                session_id, self.name, draft.text,
                covered_ids=[m.id for m in messages if m.id is not None],
                anchors=anchors.extract_anchors(draft.text), dropped_anchors=dropped,
                model=draft.model,
            )
            env.state.set_covering(self.name, turns[-1].number,
                                   boundary_turn=turns[-1].number, behind="",
                                   pinned=[p.stored() for p in kept],
                                   released=st.released + len(released))
        added, removed = summarizer.diff_size(st.text, draft.text)
        pinned_now = {p.text for p in kept}
        guarded = configured.drift_guard
        return [SummaryUpdated(
            version=record.version, upto=turns[-1].number, added=added, removed=removed,
            unit=summarizer.diff_unit(st.text, draft.text),
            clipped_to=self.summary_limit() if draft.clipped else None,
            pinned=tuple(a for a in dropped if a in pinned_now) if guarded else (),
            unguarded=() if guarded else tuple(dropped),
            refused=tuple(refused) if guarded else (), unsaid=tuple(unsaid),
            released=tuple(p.text for p in released), pin_limit=self.pin_limit(),
            sensitive=tuple(dict.fromkeys(
                kind for m, text in zip(messages, masked, strict=True)
                for kind in sensitive.kinds_between(m.content, text))),
        )]

    @staticmethod
    def _sources(
        env: MemoryEnv, st: SummaryState, new: Sequence[str],
        said: Sequence[tuple[int | None, str]], mask: Callable[[str], str],
    ) -> dict[str, tuple[int | None, str]]:
        """Anchor → (turn, quote) of the message the dropped anchor came from.

        That is the first of the turns just folded that says it, or else (the
        old summary held it) the latest summarized turn that did: ids and dates
        recur, and the latest mention is the one the summary was keeping.
        """
        found = first_quotes(new, said)
        older = [a for a in new if a not in found and anchors.present(a, st.text)]
        return {**found, **SummaryMemory._said_before(env, st, older, mask)}

    @staticmethod
    def _said_before(env: MemoryEnv, st: SummaryState, older: Sequence[str],
                     mask: Callable[[str], str], *, latest: bool = True
                     ) -> dict[str, tuple[int | None, str]]:
        """Anchor → (turn, quote) of the latest summarized turn that says it, looked for
        only so far back; not `latest`: its page's first message that does (a turn's own
        words before a reply repeating them, as the pin was first quoted)."""
        found: dict[str, tuple[int | None, str]] = {}
        if not (older and st.boundary):
            return found
        # Newest first, a page at a time, and only so far back: reading every
        # summarized turn would make each prune cost more as the session grows.
        # An anchor said longer ago stays pinned, without its quote.
        last, oldest = st.boundary, max(1, st.boundary - QUOTE_LOOKBACK_TURNS + 1)
        while older and last >= oldest:
            first = max(oldest, last - QUOTE_PAGE_TURNS + 1)
            records = env.state.store.history.messages(env.state.session_id, first, last)
            # Quotes are masked like the anchors: a quote may sit next to a card number.
            found.update(first_quotes(older, ((r.turn, mask(r.content)) for r in (
                reversed(records) if latest else records))))
            older = [a for a in older if a not in found]
            last = first - 1
        return found


def next_batch(
    history: HistoryView, first: int, last: int, max_tokens: int
) -> list[HistoryTurn]:
    """Turns first..last, oldest first, as many as fit `max_tokens` (always at least one):
    what one summarizer call folds in. Read a page at a time, never the whole range."""
    batch: list[HistoryTurn] = []
    used = 0
    while first <= last:
        for turn in history.turns(first, min(last, first + BATCH_PAGE_TURNS - 1)):
            if batch and used + turn.tokens > max_tokens:
                return batch
            batch.append(turn)
            used += turn.tokens
        first += BATCH_PAGE_TURNS
    return batch


def behind_warning(sent: Sequence[HistoryTurn], first_waiting: int,
                   last_waiting: int) -> SummaryBehind:
    """The summary is behind: `sent` go raw, turns first_waiting..last_waiting (none when
    empty) did not fit the budget beside them and wait for it to catch up."""
    waiting = (first_waiting, last_waiting) if first_waiting <= last_waiting else (0, 0)
    return SummaryBehind(sent[0].number if sent else 0, sent[-1].number if sent else 0,
                         *waiting)
