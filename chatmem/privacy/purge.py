"""Forget by mention: what `facts forget --purge` erases, and where.

A purged fact's value (and each value it had before) is erased where it is
mentioned (chatmem.privacy.mentions) in every session of the fact's user
profile, whoever said it and whichever session first stated the fact: the
same person told it in the other sessions too. Everything around a mention is
kept as it was, and so is a mention that begins a longer name the profile has stored (a
fact's value, a pinned detail): purging 张伟 keeps 张伟明; so is one search's wider fold of
traditional Chinese finds and the purge's exact one does not (乾隆 for 干隆, 於梅 for 于梅:
perhaps someone else), shown by a dry run and counted when asking. A purge is all or nothing
(`purge_fact`): the fact and every mention go in one transaction, or, when anything fails
on the way, nothing does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

from chatmem.errors import StoreError
from chatmem.privacy.date_forms import date_of
from chatmem.privacy.mentions import (
    Span,
    all_spans,
    begins_longer_name,
    erase_mentions,
    kept_spans,
    needles,
    only_markers,
    searchable,
    unsure,
)
from chatmem.privacy.near_mentions import other_numbers, other_spellings
from chatmem.privacy.phones import NumberForm, form_of, number_of
from chatmem.store.records import FactScope
from chatmem.store.redaction_plan import Place

if TYPE_CHECKING:
    from chatmem.store import FactRecord, MessageRecord, Redaction
    from chatmem.store.privacy_protocols import PrivacyStore
    from chatmem.store.records import FactHistoryRecord
    from chatmem.store.redaction_plan import RewritePlan


@dataclass(frozen=True)
class Mentioned:
    """A stored message that mentions a purged value, and where."""

    message: MessageRecord
    spans: tuple[Span, ...]
    """The mentions a purge erases."""
    kept: tuple[Span, ...] = ()
    """Mentions it keeps: part of a longer stored name (张伟 in 张伟明)."""
    unsure: tuple[Span, ...] = ()
    """Erased mentions a longer name may go on from (张伟 in 张伟说): shown to check."""
    spelled_otherwise: tuple[Span, ...] = ()
    """Mentions it keeps, as search reads them but not the exact value: written with a
    character simplified text also writes as itself (乾隆 for 干隆). Perhaps another
    person's name: shown to check, never erased."""
    other_numbers: tuple[Span, ...] = ()
    """Digit runs it keeps that may be a purged phone number and may be another one
    (555-0134 for +1 415 555 0134: chatmem.privacy.phones): shown to check, never erased."""
    number_forms: frozenset[NumberForm] = frozenset()
    """How they are written otherwise than the number: in part, with a country code..."""


@dataclass(frozen=True)
class Purge:
    """What a purge looks for, and in which sessions."""

    values: tuple[str, ...]
    user: str | None
    session_ids: tuple[int, ...]
    keep: tuple[str, ...] = ()
    """Longer names that hold a value (张伟明 for 张伟): never erased from inside."""

    @property
    def needles(self) -> list[str]:
        """What every row of ASCII text mentioning a value holds (mentions.needles): the
        store's cheap prefilter, with every row holding a character beyond ASCII (`fold`
        takes accents and marks out: Núñez mentions Nunez); "" (every row) for a value
        without one."""
        return [found for value in self.values for found in needles(value) or [""]]


def plan(store: PrivacyStore, fact: FactRecord) -> Purge:
    """The values to erase (the fact's and its earlier ones) and its profile's sessions.

    A session's fact is purged by the session's owner only: in a session shared with this
    role the mentions are the owner's messages, which a purge could not erase, and an
    erasure is complete or does not happen. Checked here, so a dry run and the purge
    itself refuse alike."""
    user = fact.user
    if fact.scope != FactScope.USER and fact.session_id is not None:
        store.sessions.check_session_owned(fact.session_id, "purge a fact of")
        user = store.sessions.session_by_id(fact.session_id).user
    history = store.facts.fact_history([fact.id]).get(fact.id, [])
    earlier = [h.value for h in history]
    said = _said_otherwise(store, fact, history)
    values = tuple(v for v in dict.fromkeys([fact.value, *earlier, *said]) if searchable(v))
    session_ids = tuple(store.redactions.profile_session_ids(user))
    return Purge(values, user, session_ids,
                 _longer_names(store, fact.id, user, values, session_ids))


def _said_otherwise(store: PrivacyStore, fact: FactRecord,
                    history: Sequence[FactHistoryRecord]) -> list[str]:
    """The fact's values as the messages they were read from wrote them otherwise (一万五 for
    15000: said_values.written_otherwise): the user's words a purge erases too, found by
    the turn each value cites (its own, and those of its earlier values, `history`)."""
    from chatmem.memory.said_values import written_otherwise

    cited: dict[int, dict[int, list[str]]] = {}  # session → turn → values it was read from
    for value, session_id, turn in [
            (fact.value, fact.source_session_id or fact.session_id, fact.source_turn),
            *((h.value, h.source_session_id, h.source_turn) for h in history)]:
        if session_id is not None and turn is not None:  # /remember cites no turn
            cited.setdefault(session_id, {}).setdefault(turn, []).append(value)
    said: list[str] = []
    for session_id, turns in cited.items():
        for message in store.history.messages_in_turns(session_id, turns):
            for value in turns.get(message.turn, ()):
                said += written_otherwise(value, message.content)
    return said


def _longer_names(store: PrivacyStore, fact_id: int, user: str | None, values: Sequence[str],
                  session_ids: Sequence[int]) -> tuple[str, ...]:
    """The profile's stored names (other facts' values, pinned details) that begin with one
    of `values` and go on: someone else's name the purge must not cut into (张伟明 for 张伟:
    a Chinese name starts with the family name). A value inside or at the end of one is
    still erased there: 杭州西湖 mentions 西湖."""
    from chatmem.memory.pins import pinned_facts

    others = [] if user is None else [f.value for f in store.facts.facts(user=user)]
    for session_id in session_ids:
        others += [f.value for f in store.facts.facts(session_id=session_id)]
        others += [p.text for p in pinned_facts(store.memory, session_id)]
    return tuple(name for name in dict.fromkeys(o.strip() for o in others)
                 if any(begins_longer_name(name, v) for v in values))


def mentioned_messages(store: PrivacyStore, purge: Purge) -> list[Mentioned]:
    """The stored messages the purge would change, with the mentions it would erase."""
    found = []
    for message in store.redactions.messages_containing(purge.session_ids, purge.needles,
                                                        beyond_ascii=True):
        spans = all_spans(message.content, purge.values, purge.keep)
        kept = kept_spans(message.content, purge.values, purge.keep) if purge.keep else []
        otherwise = other_spellings(message.content, purge.values, purge.keep)
        numbers = other_numbers(message.content, purge.values)
        if spans or kept or otherwise or numbers:
            forms = frozenset(_form_of(purge.values, message.content[s.start:s.end])
                              for s in numbers)
            found.append(Mentioned(message, tuple(spans), tuple(kept), tuple(
                s for s in spans if unsure(message.content, s)), tuple(otherwise),
                tuple(numbers), forms))
    return found


@dataclass(frozen=True)
class LeftMentions:
    """Mentions of a purged value a purge leaves as they are: in sessions `owner` owns and
    shares with the role purging (its messages are theirs to erase)."""

    owner: str
    mentions: int
    messages: int


def mentions_left(store: PrivacyStore, purge: Purge) -> list[LeftMentions]:
    """The mentions of the purge's values in the profile's sessions others own, by owner."""
    others = store.redactions.others_profile_sessions(purge.user)
    if not others:
        return []
    found = mentioned_messages(store, replace(purge, session_ids=tuple(others)))
    by_owner: dict[str, list[Mentioned]] = {}
    for m in found:
        if m.spans:
            by_owner.setdefault(others[m.message.session_id], []).append(m)
    return [LeftMentions(owner, sum(len(m.spans) for m in ms), len(ms))
            for owner, ms in sorted(by_owner.items())]


def sessions_named_with(store: PrivacyStore, purge: Purge) -> list[str]:
    """The names of the purge's sessions that mention one of its values: a purge changes
    what was said, not what a session is called (`sessions rename` does)."""
    names = store.sessions.session_names(purge.session_ids)
    return sorted(name for name in names.values() if all_spans(name, purge.values, purge.keep))


def erase(store: PrivacyStore, purge: Purge) -> Redaction:
    """Erase every mention of the purge's values in its sessions and the profile's facts."""
    return store.redactions.rewrite_stored_text(purge.session_ids, purge.user, purge.needles,
                                                _eraser(purge), beyond_ascii=True)


def preview(store: PrivacyStore, fact: FactRecord) -> Redaction:
    """What `purge_fact` would change beyond the fact, changing nothing: the plan it applies
    (`_planned`), so a dry run counts what the purge then does."""
    from chatmem.memory.facts import scrub_fact

    planned = _planned(store, fact)
    return _with_turns(planned.redaction, scrub_fact(store.facts, fact.id, write=False))


@dataclass(frozen=True)
class Erased:
    """What `purge_fact` did."""

    redaction: Redaction
    kept_numbers: frozenset[NumberForm] = frozenset()
    """How the forms a text it read keeps are written that may be a purged phone number and
    may be another one (555-0134 for +1 415 555 0134: near_mentions.other_numbers), never
    erased: noted from the rows the purge reads anyway, not counted."""


def purge_fact(store: PrivacyStore, fact_id: int) -> Erased:
    """Erase a fact physically, its line from the contexts that sent it, and every mention
    of its values (`plan`), in one transaction; then rewrite the file (`vacuum`). Another
    fact left with nothing of its own (its whole value was a purged one) is deleted too:
    kept, it would send [forgotten] with every turn.

    All or nothing: a store error on the way (a full disk, a lost connection, a
    refused statement) undoes every change, and is raised again saying so; Ctrl-C
    undoes it too.
    """
    from chatmem.memory.facts import scrub_fact

    try:
        # Planned first without the write lock, where the texts are read and erased in
        # memory (the fold is most of a purge's work: 40,000 texts at 100,000 messages);
        # then planned again under it, from what is stored then, by an eraser that knows
        # the result for each text it has seen: a text written or changed meanwhile is
        # erased then, nothing is missed, and the lock is held for reads and writes only.
        ahead = _Eraser(plan(store, store.facts.fact(fact_id)))
        _planned(store, store.facts.fact(fact_id), ahead)
        with store.write():
            # Read under the write lock: what the fact holds now is what goes.
            fact = store.facts.fact(fact_id)
            eraser = ahead.again(plan(store, fact))
            planned = _planned(store, fact, eraser)
            store.facts.forget_fact(fact_id, purge=True)
            done = store.redactions.apply_rewrite(planned)
            # After the rewrite, which leaves the fact's lines where they are (a marker
            # in place of the value): these turns are counted whichever changed them.
            done = _with_turns(done, scrub_fact(store.facts, fact_id))
    except StoreError as e:
        e.message = f"{e.message} (the purge was undone: nothing was changed)"
        e.args = (e.message,)
        raise
    store.vacuum()
    return Erased(done, eraser.kept_numbers)


def _planned(store: PrivacyStore, fact: FactRecord,
             eraser: _Eraser | None = None) -> RewritePlan:
    """Every row purging `fact` rewrites (its own row and history go whole), reading only."""
    eraser = eraser or _Eraser(plan(store, fact))
    purge = eraser.purge
    return store.redactions.plan_rewrite(purge.session_ids, purge.user, purge.needles,
                                         eraser, beyond_ascii=True,
                                         without_fact=fact.id, emptied=only_markers)


def _eraser(purge: Purge) -> Callable[[str], str]:
    return partial(erase_mentions, values=purge.values, keep=purge.keep)


class _Eraser:
    """A purge's eraser that notes whether a text it is handed keeps a form that may be a
    purged phone number: the purge says how to find those only when there are some. It
    keeps what it made of each text (by digest), for `again`."""

    def __init__(self, purge: Purge, known: dict[bytes, _Erased] | None = None) -> None:
        self.purge = purge
        self.erase = _eraser(purge)
        self.numbers = any(number_of(v) or date_of(v) for v in purge.values)
        self.kept_numbers = frozenset[NumberForm]()
        self._known: dict[bytes, _Erased] = {} if known is None else known

    def again(self, purge: Purge) -> _Eraser:
        """An eraser for `purge` that reuses this one's results if it looks for the same:
        a text is erased the same way whenever it is read (noting nothing yet)."""
        return _Eraser(purge, self._known if purge == self.purge else None)

    def __call__(self, text: str) -> str:
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        known = self._known.get(key)
        if known is None:
            forms = frozenset[NumberForm]()
            if self.numbers:
                forms = frozenset(_form_of(self.purge.values, text[s.start:s.end])
                                  for s in other_numbers(text, self.purge.values))
            erased = self.erase(text)
            known = _Erased(None if erased == text else erased, forms)
            self._known[key] = known
        self.kept_numbers |= known.kept_numbers
        return text if known.text is None else known.text


@dataclass(frozen=True)
class _Erased:
    text: str | None
    """The erased text; None: the same (most texts a purge reads mention nothing)."""
    kept_numbers: frozenset[NumberForm]


def _form_of(values: Sequence[str], written: str) -> NumberForm:
    """How a form kept as perhaps a value is written: a date read either way round (7/5/2023
    for May 7, 2023: near_mentions.other_numbers) or without the value's year (5月7日 for
    2023年5月7日), else as phones.form_of says."""
    said = date_of(written)
    if said is not None and any(date_of(v) is not None for v in values):
        dated = any((d := date_of(v)) is not None and d.year is not None for v in values)
        return NumberForm.DATE_NO_YEAR if said.year is None and dated else NumberForm.DATE_ORDER
    return form_of(values, written)


def _with_turns(done: Redaction, turn_ids: Sequence[int]) -> Redaction:
    for turn_id in turn_ids:
        done.add(Place.TURNS, ("turns", turn_id))
    return done
