"""A transcript grouped into replay steps: user turns (each with its recorded reply), messages
stored as they are, probes and system prompt changes, in the order replay plays them."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from chatmem import expected_text
from chatmem.transcripts.format import Item, Probe, SystemPrompt, Transcript, TranscriptMessage


class StepKind(StrEnum):
    TURN = "turn"
    """A user message, sent as a turn (with its recorded reply when replies are kept)."""
    IMPORT = "import"
    """Messages stored as they are (an opening greeting, a second assistant message)."""
    PROBE = "probe"
    """A question asked of the context at this point, scored, never stored as a message (a
    saved replay keeps it as `sessions import` keeps a probe line)."""
    SYSTEM = "system"
    """The session's system prompt changes from here on."""


@dataclass(frozen=True)
class Replaced:
    """What a probe expects that --regenerate leaves nowhere to find: the `ids` of recorded
    assistant messages (replaced by new replies, a greeting dropped) and the `text` that
    only they said. Scored, they would lower every strategy's recall alike, buffer's too."""

    ids: tuple[str, ...] = ()
    text: tuple[str, ...] = ()


@dataclass
class Step:
    """One unit of replay work: a user turn (with its recorded reply), extra messages, a probe."""

    kind: StepKind
    message: TranscriptMessage | None = None
    reply: TranscriptMessage | None = None
    extra: list[TranscriptMessage] = field(default_factory=list)
    probe: Probe | None = None
    system: SystemPrompt | None = None
    between: list[Item] = field(default_factory=list)
    """What the transcript holds between a user message and its recorded reply."""
    replaced: Replaced | None = None
    """A probe's, when replies are regenerated: what it expects only they held."""


def plan(transcript: Transcript, keep_replies: bool) -> list[Step]:
    """Group a transcript into replay steps.

    A user message and its recorded reply are one turn, whatever comes between them:
    a system message or a probe is played in its place between the two, a system
    prompt change takes effect after the reply (from the next turn, as `sessions
    import` stores it). A user message followed by another user message has no reply
    of its own and is stored as it is, as are messages that are not part of a turn (an
    opening greeting, a second assistant message), so every strategy sees the recorded
    history and no reply is invented for it. Regenerating ignores recorded assistant
    messages: each probe's step says what it expects that only they held (`Replaced`).
    """
    items = transcript.on_its_clock()
    steps: list[Step] = []
    taken: set[int] = set()
    dropped: list[tuple[str | None, str]] = []  # (id, as compared) of each reply ignored
    kept: list[str] = []
    for index, item in enumerate(items):
        if index in taken:
            continue
        if not keep_replies and isinstance(item, TranscriptMessage):
            compared = expected_text.compared(item.content)
            if item.role == "assistant":
                dropped.append((item.id, compared))
                continue
            kept.append(compared)
        if isinstance(item, Probe):
            steps.append(Step(StepKind.PROBE, probe=item,
                              replaced=None if keep_replies else _replaced(item, dropped, kept)))
        elif isinstance(item, SystemPrompt):
            steps.append(Step(StepKind.SYSTEM, system=item))
        elif item.role == "user" and not keep_replies:
            steps.append(Step(StepKind.TURN, message=item))
        elif item.role == "user":
            _plan_turn(items, index, steps, taken)
        elif steps and steps[-1].kind in (StepKind.TURN, StepKind.IMPORT):
            steps[-1].extra.append(item)
        else:
            steps.append(Step(StepKind.IMPORT, extra=[item]))
    return steps


def _plan_turn(items: list[Item], index: int, steps: list[Step], taken: set[int]) -> None:
    """The user message at `index`, with recorded replies kept: see `plan`."""
    question = items[index]
    assert isinstance(question, TranscriptMessage)
    between: list[Item] = []
    for later in range(index + 1, len(items)):
        item = items[later]
        if isinstance(item, TranscriptMessage) and item.role in ("user", "assistant"):
            if item.role == "user":
                break  # no reply of its own: stored as recorded
            taken.update(range(index + 1, later + 1))
            prompts = [i for i in between if isinstance(i, SystemPrompt)]
            steps.append(Step(StepKind.TURN, message=question, reply=item,
                              between=[i for i in between if not isinstance(i, SystemPrompt)]))
            steps.extend(Step(StepKind.SYSTEM, system=p) for p in prompts)
            return
        between.append(item)
    else:
        # The transcript ends waiting for this reply: the model gives it.
        steps.append(Step(StepKind.TURN, message=question))
        return
    if steps and steps[-1].kind in (StepKind.TURN, StepKind.IMPORT):
        steps[-1].extra.append(question)
    else:
        steps.append(Step(StepKind.IMPORT, extra=[question]))


def _replaced(probe: Probe, dropped: list[tuple[str | None, str]], kept: list[str]) -> Replaced:
    """What `probe` expects only the `dropped` assistant messages before it held (`kept`:
    every other message before it; both as the word index compares)."""
    ids = {i for i, _ in dropped if i}
    text = [t for t in probe.expect_text
            if any(expected_text.mentions(g, expected_text.compared(t)) for _, g in dropped)
            and not any(expected_text.mentions(k, expected_text.compared(t)) for k in kept)]
    return Replaced(tuple(i for i in probe.expect_ids if i in ids), tuple(text))
