"""The contract every memory strategy keeps, checked over one conversation run turn by turn.

`run_conversation` runs a conversation (a `Conversation`: `system`, `inputs`, `greeting`,
`max_tokens`, `k`) through chatmem's real engine on a real history file (or a PostgreSQL
database) with the scripted provider, and fails with an AssertionError at the first rule a
context or the state breaks. chatmem.testing.check_strategy runs it over generated
conversations; chatmem's own tests/test_contract.py runs it over every registered strategy.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict

from chatmem.activity import QUIET
from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.context_warnings import OverBudget, SummaryBehind
from chatmem.engine import Engine
from chatmem.engine.opening import engine_over, open_session
from chatmem.errors import ChatmemError, StrategyFailed
from chatmem.evaluation.whatif import copy_history
from chatmem.memory.context import PART_ORDER, Context, Part
from chatmem.memory.reasons import AllTurns, Merged, NewestTurns
from chatmem.memory.registry import StrategyRegistry
from chatmem.notices import MemoryUpdateFailed, Notice
from chatmem.plugin_entries import WHAT_WENT_WRONG, registered_by
from chatmem.plugins import load_registries
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store
from chatmem.store.sqlite_files import checkpointed_hash
from chatmem.tokens import REPLY_PRIMING


class Conversation(TypedDict):
    """One conversation `run_conversation` runs, every key given."""

    system: str
    """The system prompt ("" for none)."""
    inputs: list[str]
    """What the user types, a turn each."""
    greeting: str | None
    """What the assistant says first, as turn 1 (a character app's greeting); None: the
    user opens."""
    max_tokens: int
    """Given to the strategy's parameter of that name, where it has one."""
    k: int
    """Given to the strategy's parameter of that name, where it has one."""


CONVERSATION_KEYS = tuple(Conversation.__annotations__)
"""What a conversation run_conversation takes holds: Conversation's keys, checked as it
starts for a caller whose types were not checked."""


def _session_name() -> str:
    """A name no other conversation's session has: on PostgreSQL they share a database, and
    the next run there (another process, another test) numbering them c1, c2... again went on
    in the sessions the last run left, failing the rule that what was sent is what is
    stored."""
    return f"contract-{uuid.uuid4().hex[:12]}"


def strategy_params(strategies: StrategyRegistry, name: str,
                    drawn: Mapping[str, object]) -> dict[str, str]:
    """Small windows and budgets, so dropping and trimming actually happen."""
    params = {key: str(drawn[key.rpartition(".")[2]])
              for key in strategies.strategy(name).params
              if key.rpartition(".")[2] in ("k", "max_tokens")}
    try:
        strategies.strategy(name, params)
    except ChatmemError:
        return {}
    return params


def run_conversation(name: str, convo: Conversation, folder: Path, embedder: str = "hash",
                     location: str | None = None) -> None:
    """Run `convo` turn by turn with strategy `name` (`-s` text: `notes`, `notes:k=2`,
    `notes+window`) in `folder` (its history file and the scripted provider's request log),
    ranking recall with `embedder` (`"hash"`: deterministic, no model), on SQLite, or in
    the PostgreSQL database `location` names; every rule is checked on every turn."""
    missing = [key for key in CONVERSATION_KEYS if key not in convo]
    if missing:
        # A bare KeyError 'k' from deep in the run named neither the call nor the keys.
        raise ValueError(f"run_conversation: the conversation lacks {', '.join(missing)}: it "
                         f"takes {', '.join(CONVERSATION_KEYS)} (as OPENED_BY_THE_ASSISTANT)")
    log = folder / "requests.jsonl"
    provider = ScriptedProvider(log_path=log)
    settings = Settings(system=convo["system"], embeddings=EmbeddingsSection(provider=embedder))
    # Loaded now, so a plugin installed since chatmem was imported is found.
    registries = load_registries()
    strategies = registries.strategies
    try:
        params = strategy_params(strategies, name, convo)
    except ChatmemError as e:
        # No listener prints the loading's warnings here (the CLI's does): without them,
        # an author whose plugin was skipped read only that the name is unknown.
        skipped = [f"{registered_by(p.plugin)} was skipped: {WHAT_WENT_WRONG[p.kind]}: {p.detail}"
                   for p in registries.problems]
        if not skipped:
            raise
        raise AssertionError(f"{e}; " + "; ".join(skipped)) from e
    db = None if location else folder / "c.db"
    session = _session_name()
    with Store(location or folder / "c.db") as store:
        try:
            _run(store, session, name, params, strategies, settings, provider, convo, log, db)
        except StrategyFailed as e:
            # A build that raised, or returned what chatmem refuses to send, is a broken rule
            # as the others are (README: an AssertionError saying which), not an error of
            # chatmem's own whose traceback the author reads through.
            raise AssertionError(str(e)) from e
        finally:
            if location:
                _leave_nothing(store, session)


def _leave_nothing(store: Store, session: str) -> None:
    """Delete the conversation's session from the PostgreSQL database the author gave
    (check_strategy(postgres=URL) left one per generated conversation, a few hundred test
    sessions in `chatmem sessions` there), whether its rules held or not."""
    if session in {s.name for s in store.sessions.list_sessions()}:
        store.sessions.delete_session(session)


def _run(store: Store, session: str, name: str, params: dict[str, str],
         strategies: StrategyRegistry, settings: Settings, provider: ScriptedProvider,
         convo: Conversation, log: Path, db: Path | None) -> None:
    # The contract is about what a strategy builds, over budget too: the engine's
    # pre-flight refusal of an input that cannot fit is tested in test_engine.py.
    engine = open_session(store, settings, provider, session,
                          strategy=strategies.parse(name, params),
                          strategies=strategies, allow_over_budget=True)
    if convo["greeting"]:
        # An imported transcript may open with the assistant.
        store.history.import_messages(engine.session.id,
                                      [{"role": "assistant", "content": convo["greeting"]}])
    for text in convo["inputs"]:
        history_turns = store.history.turn_count(engine.session.id)
        check_build_writes_nothing(engine, text, db)
        result = engine.run_turn(text)
        assert result.status == "ok", (
            f"the turn for {text!r} {result.status}: {result.record.error}")
        check_updated(result.notices)
        check_context(store, engine.session.id, engine.strategy.params, result.context, text)
        # Part counts are honest: they add up to a fresh count of what was sent.
        fresh = provider.token_counter().count_messages(result.context.messages())
        assert result.record.estimated_tokens == result.context.tokens == fresh, (
            f"the parts' token counts add up to {result.context.tokens}, a fresh count of the"
            f" messages sent is {fresh}: count your own text with Message.counted(role, text,"
            f" request.counter) and send stored messages with the tokens they came with")
    check_prepared_builds_alike(engine, name, params, strategies, text, db)
    # What the model received is what each stored turn says was sent.
    chats = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    sent = [c["messages"] for c in chats if c["purpose"] == "chat"]
    stored = [Context.from_json(t.context).messages()
              for t in store.turns.turns(engine.session.id)]
    assert sent == stored, "what the model was sent is not what the stored turns say was sent"
    if engine.strategy.keeps_state:
        # The last turn followed the most updates: its state is the one to rebuild.
        check_catch_up(engine, strategies.strategy(name, params), history_turns, text,
                       result.context)
    else:
        check_without_update(engine, strategies.strategy(name, params), history_turns, text,
                             result.context)


def check_updated(notices: Sequence[Notice]) -> None:
    """Every update ran to its end and answered a list of notices: an update that raised
    (or answered another thing) at every turn left the state empty before each build, and
    every other rule held over contexts with no memory of its own."""
    failed = [n for n in notices if isinstance(n, MemoryUpdateFailed)]
    assert not failed, f"an update failed: {failed[0].error}"


def check_context(store: Store, session_id: int, params: Any, context: Context,
                  text: str) -> None:
    messages = context.messages()
    # The latest input is the last message, unaltered.
    assert messages[-1] == {"role": "user", "content": text}, (
        f"the last message sent is {messages[-1]!r}, not the input {text!r} unaltered")
    assert context.parts[-1].kind == "input", "the input part is not last (assemble() puts it)"
    # Parts come in the fixed order, each kind at most once.
    kinds = [p.kind for p in context.parts]
    assert kinds == sorted(kinds, key=PART_ORDER.index) and len(kinds) == len(set(kinds)), (
        f"parts {kinds}: each kind at most once, in the order {', '.join(PART_ORDER)}")
    # The conversation opens on a user message or on the session's own opening (a greeting
    # stored before any user message, as a character app or a transcript opens with), never
    # on a reply cut from its question.
    in_order = store.history.messages(session_id)
    opening = {m.id for m in itertools.takewhile(lambda m: m.role != "user", in_order)}
    first_part, first = next((p, m) for p in context.parts for m in p.messages
                             if m.role != "system")
    # drop_leading_assistant() takes turns: a recalled reply needs its question, not that.
    advice = ("recall whole turns (request.history.turns(n, n)): a reply goes with the "
              "question it answers" if first_part.kind == "recalled"
              else "drop_leading_assistant()")
    assert first.role == "user" or first.id in opening, (
        f"the conversation sent opens on {first.role!r} {first.content!r} (turn {first.turn},"
        f" in the {first_part.kind!r} part), not on a user message or the session's opening"
        f" greeting: {advice}")
    history = context.part("history")
    if history is not None:
        opens = history.messages[0]
        assert opens.role == "user" or opens.id in opening, (
            f"the history part opens on {opens.role!r} {opens.content!r} (turn {opens.turn}),"
            " not on a user message or the session's opening greeting: "
            "drop_leading_assistant()")
        check_opening_kept(history, bool(opening))
    # No message is split or altered: each remembered message is a stored one, verbatim.
    stored = {m.id: m for m in in_order}
    for part in context.parts:
        for message in part.messages:
            if part.kind in ("history", "recalled"):
                assert message.id is not None, (
                    f"the {part.kind!r} part holds {message.content!r}, not a stored message:"
                    " text of your own goes in a 'summary' or 'facts' part")
            if message.id is not None:
                original = stored.get(message.id)
                assert original is not None and (message.role, message.content) == (
                    original.role, original.content), (
                    f"the {part.kind!r} part holds {message.role} {message.content!r} as "
                    f"stored message {message.id}, which is "
                    f"{'not stored' if original is None else repr(original.content)}:"
                    " send stored messages unaltered and whole")
    # Honest budgets: whenever system and input fit, the whole context fits. A combination
    # addresses its members' budgets as `summary-buffer.max_tokens` and shares the smallest.
    budgets = [int(value) for key, value in params.items()
               if key.rpartition(".")[2] == "max_tokens"]
    if budgets:
        budget = min(budgets)
        fixed = REPLY_PRIMING + sum(
            p.tokens for p in context.parts if p.kind in ("system", "input")
        )
        combination = any("." in key for key in params)
        # Turns a summary is behind on stay whole rather than lost, and the context says so
        # (summary_behind beside over_budget): the scripted summarizer makes nothing of a
        # greeting alone, so turn 1 stayed over a budget the system prompt filled.
        behind = any(isinstance(w, SummaryBehind) for w in context.warnings)
        if behind and context.tokens > budget:
            assert any(isinstance(w, OverBudget) for w in context.warnings), context.to_json()
        if fixed <= budget and context.tokens > budget and not behind:
            # A combination keeps its newest history turn whole (memory/combined.py): it
            # may go over only once every other history turn and every recalled turn is
            # gone, and then it says so.
            assert combination, (context.tokens, budget, context.to_json())
            history = context.part("history")
            assert history is not None and context.part("recalled") is None
            assert len({m.turn for m in history.messages}) == 1
            assert context.warnings, "a context over budget must say so"
        elif fixed > budget:
            assert context.warnings, "a context over budget must say so"


def check_opening_kept(history: Part, opened: bool) -> None:
    """A greeting the session opens with (turn 1) is sent whenever the turn after it is,
    unless the strategy names the limit that stopped at turn 2 (its count of turns, or the
    budget): a history never loses its opening without a reason inspect can give."""
    turns = sorted({m.turn for m in history.messages if m.turn is not None})
    if not opened or 2 not in turns or 1 in turns:
        return
    reasons = history.reason.reasons if isinstance(history.reason, Merged) else (history.reason,)
    for reason in reasons:
        assert not isinstance(reason, AllTurns), ("the greeting was left out", reason)
        # A reason that counts turn 1 dropped names its limit; one that does not (a summary
        # covers it) has nothing to explain.
        if isinstance(reason, NewestTurns) and reason.turns and reason.turns[0] == 2 and (
                reason.dropped and reason.dropped[0] == 1):
            kept = reason.turns[1] - reason.turns[0] + 1
            assert reason.to_fit or reason.cut or kept >= reason.value, (
                "the greeting was left out", reason)


def check_prepared_builds_alike(engine: Engine[Store], name: str, params: dict[str, str],
                                strategies: StrategyRegistry, text: str,
                                db: Path | None) -> None:
    """What a front end's opening reads ahead (Engine.prepare, the strategy's `prepare`)
    writes nothing, and the first build after it is the one an engine opened without it
    makes: the same context, recall's rows and scores included."""
    settings = engine.settings
    assert settings is not None  # run_conversation's engine has the conversation's

    def opened() -> Engine[Store]:
        return open_session(engine.store, settings, engine.provider,
                            engine.session.name, strategy=strategies.parse(name, params),
                            strategies=strategies, allow_over_budget=True,
                            embedder=engine.embedder)

    engine.indexing.close()  # every vector stored: both builds read the same
    plain, prepared = opened(), opened()
    stored = checkpointed_hash(db) if db else None
    prepared.prepare()
    if db:
        assert checkpointed_hash(db) == stored, "preparing wrote to the store"
    assert prepared.build_context(text).to_json() == plain.build_context(text).to_json(), (
        "the first build after prepare() is not the one without it")


def check_build_writes_nothing(engine: Engine[Store], text: str, db: Path | None) -> None:
    """A build reads: the session's state is as it was, and so (SQLite: byte for byte) is
    everything else stored. Only an update, after a turn commits, may write."""
    members = [m.name for m in engine.strategy.members]
    state = [engine.state.get(m) for m in members]
    stored = checkpointed_hash(db) if db else None
    engine.build_context(text)
    assert [engine.state.get(m) for m in members] == state, "a build changed its state"
    if db:
        assert checkpointed_hash(db) == stored, "a build wrote to the store"


def check_catch_up(engine: Engine[Store], fresh: Any, history_turns: int, text: str,
                   sent: Context) -> None:
    """The state turn-by-turn updates built is the state one update with `catch_up` builds
    from nothing over the same history, as a what-if (`inspect --turn N -s NAME`) and replay
    rebuild it: the context for the same input is the one the turn sent, and a second
    catch-up update finds nothing left to do (state and context unchanged).

    A strategy that summarizes (`summarizes`) is held to the second only: a summarizer
    folding the turns in other batches writes another summary (the model's words, its
    length, the drift guard's pins, and for summary-buffer the prune boundary that follows
    from them), so its context is not the same text, only as complete."""
    with _over_a_copy(engine, fresh, history_turns) as rebuilt:
        check_updated(rebuilt.catch_up())
        members = [m.name for m in fresh.members]
        state = [rebuilt.state.get(m) for m in members]
        once = rebuilt.build_context(text)
        if not any(m.summarizes for m in fresh.members):
            assert by_place(once) == by_place(sent), (
                "one catch-up update did not rebuild the state turn-by-turn updates built: "
                "with env.catch_up, update must cover every turn of env.history its state "
                f"does not cover yet, not one step; the context sent was {by_place(sent)!r},"
                f" after one catch-up {by_place(once)!r}")
        if history_turns:
            # As chatmem catches up (Engine.catch_up): an update is never asked of an empty
            # history, so a state it would write there is no state left uncovered.
            check_updated(rebuilt.update_memory(catch_up=True))
        assert [rebuilt.state.get(m) for m in members] == state, (
            "a second catch-up update changed the state: the first left turns uncovered")
        assert rebuilt.build_context(text).messages() == once.messages(), (
            "a second catch-up update changed the context: the first left turns uncovered")


def check_without_update(engine: Engine[Store], fresh: Any, history_turns: int, text: str,
                         sent: Context) -> None:
    """Without `keeps_state`, the stored history is all a build needs: a what-if
    (`inspect --turn N -s NAME`, `inspect --next` before a fork's first turn) builds over a
    copy of it and runs no update. A build that read the state its update stores passed
    every other rule and went without it there, silently (plugin71's `zhangben`)."""
    with _over_a_copy(engine, fresh, history_turns) as bare:
        if engine.embedder is not None:
            bare.indexing.finish(engine.embedder)  # recall's vectors, as the turns stored them
        alone = bare.build_context(text)
    assert by_place(alone) == by_place(sent), (
        "over the stored history alone (no update: a what-if runs none for a strategy"
        " without keeps_state) the context is not the one the turn sent: a build that reads"
        " what its update stores (request.state.get) needs keeps_state = True; the context"
        f" sent was {by_place(sent)!r}, without an update {by_place(alone)!r}")


@contextmanager
def _over_a_copy(engine: Engine[Store], fresh: Any, history_turns: int
                 ) -> Iterator[Engine[Store]]:
    """An engine of `fresh` over a scratch copy of `engine`'s first `history_turns` turns,
    with no state: what a what-if or replay builds over."""
    with Store(":memory:") as scratch:
        copy = scratch.sessions.create_session(
            "rebuilt", fresh.name, dict(fresh.params), provider=engine.provider.name,
            model=engine.provider.model, system=engine.session.system,
            tokenizer=engine.counter.key)
        copy_history(engine.store.history, engine.session.id, scratch.history, copy.id,
                     history_turns, QUIET)
        yield engine_over(scratch, copy, ScriptedProvider(), fresh, budget=engine.budget,
                          embedder=engine.embedder)


def by_place(context: Context) -> list[dict[str, str]]:
    """The messages of `context`, each fact sent named by its place in the part, not by its
    id: ids are the store's row numbers, and the scratch store numbers its facts from 1."""
    messages = []
    for part in context.parts:
        for message in part.messages:
            content = message.content
            for place, fact_id in enumerate(part.fact_ids):
                content = content.replace(f"\n[{fact_id},", f"\n[#{place},", 1)
            messages.append({"role": message.role, "content": content})
    return messages

