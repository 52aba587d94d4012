"""Writing an extraction's facts: turn by turn, so what was said last wins, each change in
the scope and under the key the session already knows it by (chatmem.memory.extraction
asks the model; this is what its answer does to the store).

Facts stay in the session they were stated in unless the user opted in; a turn this
session did not ask (an imported or forked history's, a group chat member's) sets and
forgets the session's own values only, a member's his own.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from chatmem.memory.extraction_answer import Extraction, FactChange, FactRetraction
from chatmem.memory.fact_keys import same_key
from chatmem.memory.later_facts import LaterFacts
from chatmem.memory.said_values import key_named, said_in
from chatmem.store.records import FactRecord, FactScope

if TYPE_CHECKING:
    from chatmem.memory.state import SessionState


def apply_extraction(
    state: SessionState, extraction: Extraction, sources: Mapping[int, int | None],
    *, user_scope: bool = False, later: LaterFacts | None = None,
    asked: Collection[int] | None = None, asked_said: Sequence[str] | None = None,
    members_said: Mapping[str, Sequence[str]] | None = None,
    speakers: Mapping[int, str] | None = None,
) -> list[str]:
    """Write an extraction turn by turn, so what was said last wins; the keys of the facts
    it forgot and set no value for again.

    Facts stay in the session unless `user_scope` (the user opted in) lets the
    extractor put lasting personal ones in the user profile. `later`: what this
    session set or forgot after a turn read, which that turn leaves as it is.
    `asked`: the turns a request of this session asked (None: all of them); another
    turn's "user" (an imported or forked history's) may be anyone, so it sets and
    forgets this session's facts only, never the profile's. `asked_said`: what the asked
    turns' user said; a value set under an asked turn that none of it holds is another
    turn's words, cited wrong (by a helper's slip, or as a member's message told it to).
    `members_said`: member → what he said in the batch; a retraction under an asked turn of
    a key his words name and the asked turns' do not is his, cited wrong (bob's "Forget my
    city." must not forget the owner's city, but his own); when several members' words name
    the key, nobody's is forgotten. `speakers`: turn → the
    group chat member who said it; his values and retractions are his own (a fact keeps
    who stated it), never another speaker's nor the user's.
    """
    steps: list[tuple[int, int, FactRetraction | FactChange]] = [
        *((r.turn, 0, r) for r in extraction.retract),
        *((c.turn, 1, c) for c in extraction.set),
    ]
    forgot: list[str] = []
    if steps:
        state.keep_speakers()
    for _turn, _order, step in sorted(steps, key=lambda s: (s[0], s[1])):
        here = asked is None or step.turn in asked
        if here and asked_said is not None and isinstance(step, FactChange) \
                and not said_in(step.value, asked_said):
            here = False
        # Who said it, as a fact keeps it: None for the user's own turn.
        who = None if here or speakers is None else speakers.get(step.turn)
        if isinstance(step, FactRetraction) and here and members_said \
                and asked_said is not None and not key_named(step.key, asked_said):
            named_by = [m for m, said in members_said.items() if key_named(step.key, said)]
            if len(named_by) > 1:
                continue
            if named_by:
                here, who = False, named_by[0]
        if isinstance(step, FactRetraction):
            forgot += _forget(state, step, later, here, who)
        else:
            _apply_change(state, step, sources, user_scope, later, here, who)
    live = state.facts_a_turn_reads(asked=True) if forgot else []
    return [k for k in dict.fromkeys(forgot) if not any(same_key(f.key, k) for f in live)]


def _forget(state: SessionState, retraction: FactRetraction,
            later: LaterFacts | None, asked: bool = True,
            speaker: str | None = None) -> list[str]:
    """Forget the key in the scopes the session sees it in, every form it is stored in: live
    facts show only the newest form (café composed and not), and the older one left behind
    would come back as the key's value. A value set after the retraction's turn stays; a
    turn not `asked` here forgets the session's own value only, a member's (`speaker`) his
    own value only."""
    key = retraction.key
    live = [f for f in state.facts_a_turn_reads(asked, speaker) if same_key(f.key, key)
            and (asked or f.scope == FactScope.SESSION)]
    if later is not None and any(later.set_after(f, retraction.turn) for f in live):
        return []
    scopes = {f.scope for f in live}
    read = {f.id for f in live}
    for fact in state.store.facts.facts(user=state.user, session_id=state.session_id):
        if fact.scope in scopes and same_key(fact.key, key) and (
                fact.id in read or fact.scope == FactScope.USER or fact.speaker == speaker):
            state.store.facts.forget_fact(fact.id)
    return [f.key for f in live]


def _apply_change(
    state: SessionState, change: FactChange, sources: Mapping[int, int | None],
    user_scope: bool, later: LaterFacts | None = None, asked: bool = True,
    speaker: str | None = None,
) -> None:
    existing = _known(state.facts_a_turn_reads(asked, speaker), change)
    # A member's first value of a key the session knows is named as it is known (小明's
    # 名字 as the profile's name), beside the value it is known by.
    named = existing if existing is not None or speaker is None \
        else _known(state.live_facts(), change)
    if existing is not None and existing.value == change.value:
        return
    if existing is not None and later is not None \
            and later.already_read(existing, sources.get(change.turn)):
        return  # that very message set this value before: read again, it changes nothing
    if later is not None and (
            later.set_after(existing, change.turn) if existing is not None
            else later.forgotten_after([change.key, *filter(None, [change.same_as])],
                                       change.turn, speaker)):
        return  # a catch-up reading an older turn: what was set or forgotten since stands
    # An existing fact keeps its key and scope, so one fact never lives twice; but a turn
    # not asked here gives this session a value of its own beside the profile's.
    scope = (FactScope.SESSION if not asked else existing.scope if existing is not None
             else change.scope if user_scope else FactScope.SESSION)
    if scope == FactScope.USER and not state.user:
        scope = FactScope.SESSION  # a session without a user profile keeps its facts to itself
    state.store.facts.upsert_fact(
        named.key if named is not None else change.key, change.value,
        scope=scope, user=state.user, session_id=state.session_id,
        source_message_id=sources.get(change.turn), source_turn=change.turn,
        source_session_id=state.session_id, speaker=speaker,
    )


def _known(live: Sequence[FactRecord], change: FactChange) -> FactRecord | None:
    """The fact of `live` that `change` sets: of its key, else of the key it is the same as."""
    found = next((f for f in live if same_key(f.key, change.key)), None)
    if found is None and change.same_as:
        found = next((f for f in live if same_key(f.key, change.same_as)), None)
    return found
