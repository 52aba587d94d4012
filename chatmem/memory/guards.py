"""Calling a strategy's code as code chatmem does not own: its build and its update.

A plugin's strategy may raise anything, print, use the history from a thread of its own
or return what chatmem must not send or record; the guards here turn each into one
StrategyFailed line naming it (masked of secrets), and check the context a build returns
before it reaches the model, the stored record and `inspect --json`. What a strategy is
given and gives back is in chatmem.memory.base.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import date
from typing import TYPE_CHECKING, TypeVar

from chatmem.context_warnings import OverBudget
from chatmem.errors import ChatmemError, SessionGone, StrategyFailed, WrongParts, WrongThread
from chatmem.memory.base import ContextRequest, MemoryEnv, Opening, Strategy
from chatmem.memory.context import FIXED_KINDS, PART_ORDER, Context, Message, Part
from chatmem.memory.packing import wrong_recall
from chatmem.memory.sent_as_stored import STORED_KINDS, altered, not_stored_once
from chatmem.notices import DerivedMemory, ErasedWhileUpdating, MemoryUpdateFailed, Notice
from chatmem.plugin_calls import guarded, kind_of
from chatmem.plugin_output import labelled, plugin_prints_to_stderr
from chatmem.privacy.secrets import plugin_mask
from chatmem.text import is_valid

if TYPE_CHECKING:
    from chatmem.config.settings import Settings


OWN_THREAD = ("it used the history from a thread of its own: a strategy reads and writes it"
              " (request.history, env.state) only as chatmem calls build and update")
"""Why a plugin strategy's WrongThread is its own doing: its caller is on the store's thread
(run_turn checks before the build), a thread the plugin started is not."""

PARTS = ("each part is Part(kind, messages, reason) whose messages are chatmem Message values"
         " (stored ones as given, your own text as Message.counted(role, text,"
         " request.counter)), not dicts: README, \"Writing a plugin\", What a strategy is")
"""What a plugin's build must give `assemble()`, and where README documents it."""


PLUGIN_BUILDS = "plugin_build_seconds"
"""The key in SessionState.caches of the seconds each plugin strategy's build took (by name),
added up since the engine last emptied it (engine.upkeep.slow_build)."""


PLUGIN_PREPARES = "plugin_prepare_seconds"
"""As PLUGIN_BUILDS, of each plugin strategy's `prepare` (engine.upkeep.MemoryUpkeep.prepare)."""


PLUGIN_UPDATES = "plugin_update_seconds"
"""As PLUGIN_BUILDS, of each plugin strategy's update after a turn (engine.upkeep)."""


def build_guarded(strategy: Strategy, request: ContextRequest) -> Context:
    """`strategy.build(request)`: an exception other than chatmem's (a plugin's strategy may
    raise anything), or a context chatmem must not send (see `wrong_context`), is
    StrategyFailed naming the strategy, one line for the front end; nothing is sent.
    Whatever it raises is masked of secrets (`request.secrets()`, the environment's)."""
    mask = masking(request.secrets)
    started = time.monotonic()
    try:
        with request.state.built_by(strategy.name):
            context = guarded(lambda e: StrategyFailed(strategy.name, e, "failed in its build"),
                              lambda: _printing_to_stderr(lambda: strategy.build(request),
                                                          _label(strategy)), mask)
        if not type(strategy).__module__.startswith("chatmem."):  # _ships_with_chatmem, inline
            # Its own time, not its combination's: chatmem's members may take the time.
            took: dict[str, float] = request.state.caches.setdefault(PLUGIN_BUILDS, {})
            took[strategy.name] = took.get(strategy.name, 0.0) + time.monotonic() - started
    except WrongThread:
        if _ships_with_chatmem(strategy):
            raise  # the caller's thread, not the strategy's
        raise StrategyFailed(strategy.name, OWN_THREAD) from None
    except WrongParts as e:
        raise StrategyFailed(strategy.name, f"its build gave assemble() {e.wrong}"
                             + (f": {PARTS}" if e.parts else "")) from None
    wrong = wrong_context(context, request, recall_checked=_ships_with_chatmem(strategy))
    if wrong is not None:
        raise StrategyFailed(strategy.name, f"its build returned {wrong}")
    if context.budget is None:
        # A strategy that left the budget out of its context is still held to its own: the
        # refusal before sending and the over-budget warnings read it from the context.
        own = getattr(strategy, "budget", None)  # (a plugin's may lack BaseStrategy's)
        budget = guarded(lambda e: StrategyFailed(strategy.name, e, "failed in its budget()"),
                         lambda: own(request), mask) if callable(own) else request.budget
        if isinstance(budget, int) and not isinstance(budget, bool):
            if budget < 0:
                raise StrategyFailed(strategy.name, f"its budget() returned {budget!r}, not a"
                                     " token count of 0 or more or None")
            context = replace(context, budget=budget)
    if context.over_budget and not any(isinstance(w, OverBudget) for w in context.warnings):
        # A build that put its context together without assemble() (a plugin's) was sent
        # over its budget with no warning.
        context = replace(context, warnings=(*context.warnings, over_budget(context, request)))
    return context


def prepare_guarded(strategy: Strategy, opening: Opening) -> None:
    """`strategy.prepare(opening)` if it has one (optional: a plugin's may not), as a build
    is called: a state write refused, whatever it raises StrategyFailed naming it, masked.
    Ctrl-C (or a failure) leaves nothing half read: the state's caches are emptied, and the
    first build reads them whole as it would have."""
    prepare = getattr(strategy, "prepare", None)
    if not callable(prepare):
        return
    started = time.monotonic()
    try:
        with opening.state.built_by(strategy.name):
            guarded(lambda e: StrategyFailed(strategy.name, e, "could not prepare"),
                    lambda: _printing_to_stderr(lambda: prepare(opening), _label(strategy)),
                    masking(dict))
        if not _ships_with_chatmem(strategy):  # its own time, as a build's (PLUGIN_BUILDS)
            took: dict[str, float] = opening.state.caches.setdefault(PLUGIN_PREPARES, {})
            took[strategy.name] = took.get(strategy.name, 0.0) + time.monotonic() - started
    except BaseException:
        opening.state.caches.clear()
        raise


def built_to(strategy: Strategy, request: ContextRequest) -> int | None:
    """The budget `strategy` builds `request`'s context to, as build_guarded holds it: its
    own budget() (a plugin's may lack BaseStrategy's: the request's); None when that fails
    (a build says why)."""
    own = getattr(strategy, "budget", None)
    if not callable(own):
        return request.budget
    try:
        budget = own(request)
    except Exception:
        return None
    return (budget if isinstance(budget, int) and not isinstance(budget, bool) and budget >= 0
            else None)


def falls_with_setting(strategy: Strategy, request: ContextRequest) -> bool:
    """Whether the context_budget setting (`request.budget`) limits `strategy`'s budget too,
    whatever its parameters say: its budget falls with the setting's (a combination takes
    the least of its members', window's being the setting; retrieval's own max_tokens does
    not). Raising only a parameter that ties with it would be refused again."""
    own = getattr(strategy, "budget", None)  # (a plugin's may lack BaseStrategy's)
    if not callable(own):
        return True  # held to request.budget (build_guarded)
    if request.budget is None:
        return False
    try:
        lower = request.budget - 1
        return bool(own(replace(request, budget=lower)) == lower)
    except Exception:  # a plugin's budget() failing here must not hide the refusal
        return False


def over_budget(context: Context, request: ContextRequest) -> OverBudget:
    """The warning for `context`, over its budget: of its fixed parts alone, or in all."""
    assert context.budget is not None
    fixed = sum(p.tokens for p in context.parts if p.kind in FIXED_KINDS) + context.priming
    if fixed > context.budget:
        return OverBudget(fixed, context.budget, fixed=True, attached=bool(request.attached))
    return OverBudget(context.tokens, context.budget)


Result = TypeVar("Result")


def masking(secrets: Callable[[], Mapping[str, str]]) -> Callable[[str], str]:
    """What masks `secrets()` and the environment's (privacy.secrets) in a text: read only
    when there is an error to mask, not on every build."""
    return lambda text: plugin_mask(secrets()).mask(text)


def _credentials(settings: Settings | None) -> Mapping[str, str]:
    return {} if settings is None else settings.credentials()


def _printing_to_stderr(call: Callable[[], Result], label: str | None) -> Result:
    """`call()`, what it prints on stderr: a plugin strategy's debug line on stdout broke
    `ask`'s reply-only output and every --json. Each line opens with `label` (its plugin's,
    `label_output`) as what it printed while it loaded did: bare, in the middle of the
    REPL, it said nothing of which plugin printed it."""
    with plugin_prints_to_stderr():
        if label is None:
            return call()
        with labelled(label):
            return call()


_LABEL = "_chatmem_output_label"
"""The attribute of a strategy `label_output` sets (chatmem's, on a plugin's instance)."""


Built = TypeVar("Built")


def label_output(strategy: Built, label: str | None) -> Built:
    """`strategy`, what it prints as it builds and updates opening with `label` (given by
    the plugin registry through the strategy registry that built it; None: left bare)."""
    if label is not None:
        # A frozen dataclass's too; one whose class leaves no room for it stays bare.
        with contextlib.suppress(AttributeError, TypeError):
            object.__setattr__(strategy, _LABEL, label)
    return strategy


def _label(strategy: Strategy) -> str | None:
    label = getattr(strategy, "__dict__", {}).get(_LABEL)
    return label if isinstance(label, str) else None


def update_guarded(strategy: Strategy, env: MemoryEnv, *,
                   erasures: int | None = None) -> list[Notice]:
    """`strategy.update(env)`, guarded as `build_guarded` is (the turn stands; the front end
    says one line); a value other than a list of Notices is ignored, said in one notice, and
    what the update stored is kept.
    `erasures`: the session's count as the caller last found it (SessionState.updating)."""
    doing = "could not update its memory"
    # What the update stores is recorded as covering the history it was given, and is
    # dropped after a purge since it began (SessionState.updating): said so, whether the
    # update let the refusal through or caught it; the next turn's update reads it again.
    owner = None if _ships_with_chatmem(strategy) else strategy.name
    started = time.monotonic()
    with env.state.updating(env.history.turn_count(), erasures, owner) as run:
        try:
            notices = guarded(lambda e: StrategyFailed(strategy.name, e, doing),
                              lambda: _printing_to_stderr(lambda: strategy.update(env),
                                                          _label(strategy)),
                              masking(lambda: _credentials(env.settings)))
        except SessionGone:
            raise
        except WrongThread:
            if _ships_with_chatmem(strategy):
                raise
            raise StrategyFailed(strategy.name, OWN_THREAD, doing) from None
        except ChatmemError:
            if not run.dropped:
                raise
            notices = []
    if owner is not None and not env.catch_up:
        took: dict[str, float] = env.state.caches.setdefault(PLUGIN_UPDATES, {})
        took[owner] = took.get(owner, 0.0) + time.monotonic() - started
    if run.refused is not None and not run.dropped:
        raise run.refused  # (caught by the update, it would go unsaid)
    if run.dropped:
        return [ErasedWhileUpdating(DerivedMemory.STATE, run.through, run.through,
                                    strategy.name)]
    # The update ran to its end, so what it stored stands (and is sent): a wrong answer is
    # said as ignored, not as a failure to retry, and a combination's next member still runs.
    wrong = (f"{kind_of(notices)}, not a list of chatmem.notices Notice values"
             if not isinstance(notices, list) else
             next((f"a list holding {kind_of(n)}, not a chatmem.notices Notice"
                   for n in notices if not isinstance(n, Notice)), None))
    if wrong is not None:
        return [MemoryUpdateFailed(f"strategy {strategy.name!r}: its update returned {wrong}",
                                   (StrategyFailed.kind, strategy.name), stored=True)]
    return notices


CHAT_ROLES = frozenset({"system", "user", "assistant"})
"""The roles every chat model takes (and docs/chatmem.schema.json allows)."""


def _ships_with_chatmem(strategy: Strategy) -> bool:
    """Whether `strategy` is one of chatmem's own: its recall rows come from `as_json`, which
    its tests hold to, so a build need not walk them again (0.3-0.4 ms a retrieval build)."""
    return type(strategy).__module__.startswith("chatmem.")


def wrong_context(context: object, request: ContextRequest, *,
                  recall_checked: bool = False) -> str | None:
    """What makes `context` one chatmem must not send or record for `request`, or None.

    A plugin's build runs code the contract test never saw; what it returns reaches the
    model, the stored record and `inspect --json`. One pass over the messages sent: the
    tokens are the strategy's counts, checked for their type and sign, never recounted.
    `recall_checked`: the recall rows are chatmem's own (`as_json`'s), not walked again.
    """
    if not isinstance(context, Context):
        return f"{kind_of(context)}, not a Context"
    if not isinstance(context.parts, tuple):
        return f"a Context whose parts are {kind_of(context.parts)}, not a tuple"
    if not _is_count(context.priming):
        return f"a Context whose priming is {context.priming!r}, not a token count"
    # Inline, no call (~1 a build): a budget() of -10 was refused as the user's input "over
    # the context budget of -10", with the advice to raise the config's context_budget.
    if context.budget is not None and not (type(context.budget) is int
                                           and context.budget >= 0):
        return (f"a Context whose budget is {context.budget!r}, not a token count of 0 or "
                "more or None (its budget(), or the budget given to assemble())")
    order = -1
    sent: set[int] | None = None if recall_checked else set()
    for part in context.parts:
        if not isinstance(part, Part):
            return f"a Context holding {kind_of(part)}, not a Part"
        if part.kind not in PART_ORDER:
            return f"a part of kind {part.kind!r} (kinds: {', '.join(PART_ORDER)})"
        place = PART_ORDER.index(part.kind)
        if place <= order:
            return (f"a {part.kind!r} part out of place (at most one part of a kind, in the "
                    f"order {', '.join(PART_ORDER)})")
        order = place
        if not isinstance(part.messages, tuple):
            return f"a {part.kind!r} part whose messages are {kind_of(part.messages)}"
        for message in part.messages:
            wrong = _wrong_message(message, request)
            if wrong is not None:
                return f"a {part.kind!r} part holding {wrong}"
        if sent is not None and part.kind in STORED_KINDS:
            wrong = not_stored_once(part, sent)
            if wrong is not None:
                return wrong
    if sent:  # a plugin's stored messages: as the history gave them?
        wrong = altered(context.parts, request)
        if wrong is not None:
            return wrong
    last = context.parts[-1] if context.parts else None
    if last is None or last.kind != "input":
        return "a Context without the input as its last part (assemble() adds it)"
    if len(last.messages) != 1 or not (last.messages[0] is request.input
                                       or last.messages[0] == request.input):
        return "an input part that is not this request's input"
    return None if recall_checked else wrong_recall(context.recall)


def _wrong_message(message: object, request: ContextRequest) -> str | None:
    if not isinstance(message, Message):
        return f"{kind_of(message)}, not a Message"
    if not isinstance(message.role, str) or message.role not in CHAT_ROLES:
        return (f"a message of role {message.role!r} (roles: "
                f"{', '.join(sorted(CHAT_ROLES))})")
    if not isinstance(message.content, str):
        return f"a message whose content is {kind_of(message.content)}, not text"
    # ASCII without a call (is_valid's own first test): ~75 messages a build.
    if not message.content.isascii() and not is_valid(message.content):
        return "a message whose text is not UTF-8 (it holds a lone surrogate)"
    # A plain int first, without a call: ~75 messages a build.
    if not ((type(message.tokens) is int and message.tokens >= 0) or _is_count(message.tokens)):
        return f"a message of {message.tokens!r} tokens, not a count of 0 or more"
    if message.said_on is None:
        return None
    # A datetime is a date, sent with its time, but the stored context keeps only a day.
    if type(message.said_on) is not date:
        return f"a message said on {kind_of(message.said_on)}, not a datetime.date"
    # The day's line is sent: counted without it, the context is bigger than its budget says
    # (the few dated messages are recounted, once per process for a stored one).
    sent = (request.counter.count_message(message.role, message.sent) if message.id is None
            else request.state.message_counts(request.counter).sent_tokens(
                message.id, message.role, message.sent))
    if message.tokens < sent:
        return (f"a message said on {message.said_on.isoformat()} of {message.tokens} tokens,"
                f" fewer than the {sent} of its text with the day's line above it")
    return None


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


