"""A catch-up reading turn N leaves what this session set or forgot after turn N: a
/remember, a later turn's value, a forgotten fact (an imported or forked session's extractor
starts again at turn 1; it turned Lyon back into Paris and brought a forgotten name back)."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatmem.memory.extraction_answer import Extraction, FactChange, FactRetraction
from chatmem.memory.fact_writes import apply_extraction
from chatmem.memory.history_view import HistoryTurn
from chatmem.memory.later_facts import LaterFacts
from chatmem.memory.state import SessionState
from chatmem.store import FactScope, Store

PAST, FUTURE = "2020-03-01T08:00:{:02d}.000+00:00", "2099-03-01T08:00:{:02d}.000+00:00"
SESSION = FactScope.SESSION
_names = itertools.count(1)


def _session(store: Store, said: list[str], *, after: int) -> SessionState:
    """A session whose turns `said` are said before now up to turn `after`, then after
    it: what the test stores now falls between turn `after` and the next."""
    sid = store.sessions.create_session(f"会话{next(_names)}", "entity", {}).id
    store.history.import_messages(sid, [
        message for n, text in enumerate(said, 1) for message in (
            {"role": "user", "content": text, "ts": (PAST if n <= after else FUTURE).format(n)},
            {"role": "assistant", "content": "好的", "ts": (PAST if n <= after else FUTURE
                                                            ).format(n)})])
    return SessionState(store, sid)


def _turns(state: SessionState) -> list[HistoryTurn]:
    return [HistoryTurn(n, ()) for n in range(1, state.store.history.turn_count(
        state.session_id) + 1)]


def _live(state: SessionState) -> dict[str, str]:
    return {f.key: f.value for f in state.live_facts()}


def test_an_older_turn_leaves_a_remembered_value_and_a_forgotten_fact(store: Store) -> None:
    state = _session(store, ["I live in Paris.", "My name is Ada.", "我搬到了上海。"], after=2)
    sid = state.session_id
    store.facts.upsert_fact("name", "Ada", scope=SESSION, session_id=sid, source_turn=2)
    store.facts.forget_fact(store.facts.facts(session_id=sid)[0].id)  # facts forget name
    store.facts.upsert_fact("city", "Lyon", scope=SESSION, session_id=sid,
                            source_session_id=sid)  # /remember city: Lyon
    catch_up = Extraction(set=[FactChange("city", "Paris", SESSION, 1),
                               FactChange("name", "Ada", SESSION, 2)])
    apply_extraction(state, catch_up, {}, later=LaterFacts(state, _turns(state)))
    assert _live(state) == {"city": "Lyon"}
    # Said after the /remember and the forgetting: turn 3 changes both.
    newer = Extraction(set=[FactChange("city", "上海", SESSION, 3),
                            FactChange("name", "Bea", SESSION, 3)])
    apply_extraction(state, newer, {}, later=LaterFacts(state, _turns(state)))
    assert _live(state) == {"city": "上海", "name": "Bea"}


def test_an_older_turn_leaves_a_value_a_later_turn_set(store: Store) -> None:
    state = _session(store, ["我住在北京。", "不对，我住在上海。"], after=2)
    store.facts.upsert_fact("城市", "上海", scope=SESSION, session_id=state.session_id,
                            source_turn=2)
    later = LaterFacts(state, _turns(state))
    apply_extraction(state, Extraction(set=[FactChange("城市", "北京", SESSION, 1)],
                                       retract=[FactRetraction("城市", 1)]), {}, later=later)
    assert _live(state) == {"城市": "上海"}
    # The turn that set it may be read again (/retry's new reply): its value still goes in.
    apply_extraction(state, Extraction(set=[FactChange("城市", "广州", SESSION, 2)]), {},
                     later=LaterFacts(state, _turns(state)))
    assert _live(state) == {"城市": "广州"}


def test_a_retraction_in_the_batch_does_not_keep_its_own_later_turn_out(store: Store) -> None:
    state = _session(store, ["My name is Ada.", "Forget my name.", "Call me Bea."], after=0)
    batch = Extraction(set=[FactChange("name", "Ada", SESSION, 1),
                            FactChange("name", "Bea", SESSION, 3)],
                       retract=[FactRetraction("name", 2)])
    apply_extraction(state, batch, {}, later=LaterFacts(state, _turns(state)))
    assert _live(state) == {"name": "Bea"}


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(said=st.lists(st.sampled_from([None, "Paris", "巴黎", "Lyon"]), min_size=1, max_size=6),
       data=st.data())
def test_a_catch_up_ends_where_the_history_did(store: Store, said: list[str | None],
                                               data: st.DataObject) -> None:
    """Whatever turns said the city and wherever the /remember fell between them, reading
    every turn again ends on what was said or remembered last."""
    at = data.draw(st.integers(0, len(said)), label="remembered after turn")
    state = _session(store, [f"city: {v}" if v else "hello" for v in said], after=at)
    for turn, value in enumerate(said[:at], 1):  # as the extractor read them, turn by turn
        if value:
            store.facts.upsert_fact("city", value, scope=SESSION, session_id=state.session_id,
                                    source_turn=turn)
    store.facts.upsert_fact("city", "Rome", scope=SESSION, session_id=state.session_id,
                            source_session_id=state.session_id)
    changes = [FactChange("city", v, SESSION, n) for n, v in enumerate(said, 1) if v]
    apply_extraction(state, Extraction(set=changes), {}, later=LaterFacts(state, _turns(state)))
    after_remember = [v for v in said[at:] if v]
    assert _live(state) == {"city": after_remember[-1] if after_remember else "Rome"}
