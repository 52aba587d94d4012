"""What opening a session changed of it, as values: its strategy, model, saved parameters
or system prompt, and a change kept for this engine alone (the role does not own it).

Engine opening returns these among its notices (chatmem.notices.Notice); only
chatmem.render.notices words them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping


@dataclass(frozen=True)
class StrategyChanged:
    """Opening session `session` changed its strategy from `before` to `after` (labels);
    `kept`: stored with the session, else for this call only."""

    session: str
    before: str
    after: str
    kept: bool = True
    owner: str | None = None
    """The session's owner, when this role only shares it for writing: only the owner
    changes a session's settings, so the change is for this call, --save or not."""


@dataclass(frozen=True)
class ModelChanged:
    """Session `session` last ran on `before` and this engine runs on `after` (labels
    `provider:model`), as `by` chose (`--model`, `CHATMEM_MODEL`, `template NAME`, `the
    config file`; None: the defaults): its next turns run on it."""

    session: str
    before: str
    after: str
    by: str | None = None
    owner: str | None = None
    """The session's owner, when this role only shares it for writing: the session keeps
    the owner's model (SettingsNotSaved), this engine alone runs on `after`."""


@dataclass(frozen=True)
class SavedParamsDropped:
    """Session `session` was saved with parameters (`name=value` labels) that the installed
    version of its strategy `strategy` no longer declares (`unknown`) or now refuses
    (`refused`: its default is used); this engine goes on without them."""

    session: str
    strategy: str
    unknown: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()


@dataclass(frozen=True)
class SystemPromptReplaced:
    """Opening session `session` replaced its system prompt (lengths in characters);
    `kept`: stored with the session, else for this call only."""

    session: str
    before_chars: int
    after_chars: int
    kept: bool = True
    owner: str | None = None
    """As StrategyChanged's: only this owner keeps a prompt for the session."""


@dataclass(frozen=True)
class SettingsNotSaved:
    """A setting of session `session` (`what`: "strategy", "system prompt") was changed for
    this engine only: the role shares the session for writing, and only its `owner` changes
    a session's settings (strategy, parameters, system prompt, model)."""

    session: str
    what: str
    owner: str


SLOW_BUILD = 2.0
"""Seconds a plugin strategy's build may take before the turn says it waited for it."""
SLOW_UPDATE = 2.0
"""Seconds a plugin strategy's update after a turn may take before it is said: the next
prompt (or `ask`'s end) waited for it."""


class Waited(Enum):
    """What waited for a plugin strategy's slow build (BuildSlow)."""

    TURN = "turn"
    SHOWN = "shown"
    """A context built to be shown (an inspect what-if, MCP's get_context), for no turn:
    each turn on the strategy would wait as long."""
    OPENING = "opening"
    """Its `prepare`, as a chat opened the session: the first prompt waited for it."""


@dataclass(frozen=True)
class BuildSlow:
    """Plugin strategy `strategy` took `seconds` to build a context of session `session`:
    the turn waited that long before the model was asked (said once per chat)."""

    session: str
    strategy: str
    seconds: float
    waited: Waited = Waited.TURN


def built_slowly(session: str, took: Mapping[str, float] | None, *,
                 waited: Waited = Waited.TURN,
                 at_least: float | None = None) -> list[BuildSlow]:
    """BuildSlow when the plugins' builds `took` (memory.guards.PLUGIN_BUILDS) `at_least`
    (default SLOW_BUILD) seconds or more in all."""
    if not took or sum(took.values()) < (SLOW_BUILD if at_least is None else at_least):
        return []
    return [BuildSlow(session, "+".join(took), sum(took.values()), waited)]


@dataclass(frozen=True)
class UpdateSlow:
    """Plugin strategy `strategy` took `seconds` to update its memory after a turn of
    session `session`: the next prompt waited that long, with nothing shown (said once per
    chat; not for a catch-up, which shows its own progress)."""

    session: str
    strategy: str
    seconds: float


@dataclass(frozen=True)
class EmbedderSlow:
    """Plugin embedder `embedder` took `seconds` over `calls` calls to embed for a turn of
    session `session` (its query, the turn's messages indexed after it): the turn waited for
    each, which its line's time leaves out (said once per embedder,
    embeddings.guarded.SLOW_EMBED)."""

    session: str
    embedder: str
    seconds: float
    calls: int


LARGE_STATE = 8_000_000
"""Bytes of a plugin strategy's stored state (UTF-8) past which each turn is said to be slowed
by it (reading and writing 60 MB took 10-15 s a turn): StateLarge, once per chat."""


@dataclass(frozen=True)
class StateLarge:
    """Session `session` holds `size` bytes of plugin strategy `strategy`'s state,
    over LARGE_STATE: each turn reads it whole and each update writes what it sets."""

    session: str
    strategy: str
    size: int
