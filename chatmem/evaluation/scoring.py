"""What a replayed strategy cost and remembered: per-run totals and probe scores.

At each probe the context the strategy would send is scored:

- id recall: share of `expect_ids` whose message is in the context verbatim;
- text recall: share of `expect_text` strings found, case-insensitively, in
  one message of the memory parts of the context (summary, facts, recalled,
  history). The
  system prompt and the probe itself do not count: the question must not
  answer itself.

With --answer, answer recall is the share of `expect_text` the model's answer to the
probe says; for the same reason a string the question already says is not scored there
(a reply that repeats the question would find it).

`replay --regenerate` drops the recorded assistant messages: the ids a probe expects
that name them, and the strings only they said, cannot be found by any strategy and are
left out of every recall (`replaced_ids`, `replaced_text`; one notice says how many).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from chatmem import expected_text
from chatmem.context_warnings import EmbeddingFailed
from chatmem.errors import StrategyFailed
from chatmem.evaluation.steps import Replaced
from chatmem.indexing_notices import IndexingNotice
from chatmem.memory.context import Context
from chatmem.notices import (
    ContextsByWordsAlone,
    ContextsOverBudget,
    ContextsWithoutVectors,
    ExpectedRepliesReplaced,
    FactsFailed,
    MemoryUpdateFailed,
    Notice,
    SummaryFailed,
)
from chatmem.providers.base import Purpose
from chatmem.transcripts.format import Probe

MEMORY_PARTS = ("summary", "facts", "recalled", "history")


# -- results -------------------------------------------------------------------


@dataclass
class ProbeResult:
    question: str
    after_turn: int
    expect_ids: list[str]
    found_ids: list[str]
    expect_text: list[str]
    found_text: list[str]
    tokens: int
    answer: str | None = None
    answer_found: list[str] | None = None
    answer_in_question: list[str] | None = None
    """Expected strings the question itself says: not scored in the answer, which could
    be found by echoing the question."""
    answer_error: str | None = None
    """Why the model gave no answer to the probe (its one-line error): the probe is left out
    of answer recall, and the other probes' answers stand."""
    replaced_ids: list[str] = field(default_factory=list)
    replaced_text: list[str] = field(default_factory=list)
    """What the probe expects that only recorded replies held, which --regenerate replaced:
    scored nowhere."""

    def score_answer(self, reply: str) -> None:
        """Keep the model's answer to the probe and the expected strings it contains."""
        self.answer = reply
        # Compared as the context is (score_probe): an answer saying ＯＲＤ７７３１ in
        # Zürich has recalled ORD7731 and zurich.
        answer, question = expected_text.compared(reply), expected_text.compared(self.question)
        self.answer_in_question = [t for t in self.expect_text
                                   if expected_text.mentions(question, expected_text.compared(t))]
        self.answer_found = [t for t in self.answer_scored()
                             if expected_text.mentions(answer, expected_text.compared(t))]

    def answer_scored(self) -> list[str]:
        """The expected strings the answer is scored on: those the question does not say."""
        return [t for t in self.scored_text() if t not in (self.answer_in_question or [])]

    def scored_ids(self) -> list[str]:
        return [i for i in self.expect_ids if i not in self.replaced_ids]

    def scored_text(self) -> list[str]:
        return [t for t in self.expect_text if t not in self.replaced_text]

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class StrategyRun:
    label: str
    strategy: str
    params: dict[str, Any]
    prompt_tokens: list[int] = field(default_factory=list)
    strategy_calls: dict[Purpose, int] = field(default_factory=dict)
    chat_calls: int = 0
    summary_versions: int = 0
    dropped_anchors: int = 0
    """Distinct details the summarizer dropped (pinned as facts when the drift guard is on)."""
    facts: int = 0
    pinned: int = 0
    """Details the drift guard pinned (kept verbatim beside the facts)."""
    notices: list[Notice] = field(default_factory=list)
    probes: list[ProbeResult] = field(default_factory=list)
    session: str | None = None
    probes_only: bool = False
    """Turns with a recorded reply were stored without building their context (eval
    --probes-only): `prompt_tokens` stays empty, so `turns` is `turn_count`."""
    turn_count: int = 0
    """Turns replayed; otherwise `len(prompt_tokens)` says the same."""
    contexts: list[tuple[int, int | None]] = field(default_factory=list)
    """(tokens, budget) of each context built, at turns and probes: those over their budget
    become one notice (`over_budget`)."""
    indexing_said: set[IndexingNotice] = field(default_factory=set)
    """The vector backlog's notices already among `notices` (each said once per run)."""
    embedding_failures: list[EmbeddingFailed] = field(default_factory=list)
    """The error of each context built by words alone because embedding its input failed:
    one notice (`by_words_alone`), else the figures read as those of words and meaning."""
    partly_unembedded: int = 0
    """Contexts that ranked some messages by words alone, as they had no vector yet: with
    the backlog's failure among `indexing_said`, one notice (`without_vectors`)."""

    def over_budget(self) -> ContextsOverBudget | None:
        """One notice for the contexts that went over their budget, None if none did."""
        over = [(tokens, budget) for tokens, budget in self.contexts
                if budget is not None and tokens > budget]
        if not over:
            return None
        return ContextsOverBudget(len(over), len(self.contexts), min(b for _, b in over),
                                  max(t for t, _ in over))

    def by_words_alone(self) -> ContextsByWordsAlone | None:
        if not self.embedding_failures:
            return None
        first = self.embedding_failures[0]
        return ContextsByWordsAlone(len(self.embedding_failures), len(self.contexts),
                                    first.error, first.embedder)

    def without_vectors(self) -> ContextsWithoutVectors | None:
        failure = next((n.failure for n in self.notices if isinstance(n, IndexingNotice)), None)
        if not self.partly_unembedded or failure is None:
            return None
        return ContextsWithoutVectors(self.partly_unembedded, len(self.contexts), failure)

    def updates_failed(self) -> int:
        """Memory updates that failed (a summary, facts, a plugin's state left behind): its
        figures are of a memory that did not keep up. An update that stored its state and only
        answered wrongly is not one."""
        return sum(1 for n in self.notices if isinstance(n, (SummaryFailed, FactsFailed))
                   or (isinstance(n, MemoryUpdateFailed) and not n.stored))

    def replies_replaced(self) -> ExpectedRepliesReplaced | None:
        """One notice for what the probes expected that --regenerate replaced, if any."""
        ids = sum(len(p.replaced_ids) for p in self.probes)
        text = sum(len(p.replaced_text) for p in self.probes)
        return ExpectedRepliesReplaced(ids, text) if ids or text else None

    @property
    def turns(self) -> int:
        return self.turn_count if self.probes_only else len(self.prompt_tokens)

    @property
    def total_tokens(self) -> int:
        return sum(self.prompt_tokens)

    @property
    def model_calls(self) -> int:
        return sum(self.strategy_calls.values())

    def id_recall(self) -> float | None:
        return _share(sum(len(p.found_ids) for p in self.probes),
                      sum(len(p.scored_ids()) for p in self.probes))

    def text_recall(self) -> float | None:
        return _share(sum(len(p.found_text) for p in self.probes),
                      sum(len(p.scored_text()) for p in self.probes))

    def answer_recall(self) -> float | None:
        answered = [p for p in self.probes if p.answer_found is not None]
        return _share(sum(len(p.answer_found or []) for p in answered),
                      sum(len(p.answer_scored()) for p in answered)) if answered else None

    def recall(self) -> float | None:
        """The lower of id and text recall: what --min-recall checks."""
        return lower_recall(self.id_recall(), self.text_recall())

    def probe_tokens(self) -> tuple[float | None, int | None]:
        tokens = [p.tokens for p in self.probes]
        return (statistics.fmean(tokens), max(tokens)) if tokens else (None, None)

    def _prompt_tokens_json(self) -> dict[str, Any]:
        if self.probes_only:
            # Not measured, which is not the same as none sent.
            return {"total": None, "mean": None, "max": None, "per_turn": None}
        return {
            "total": self.total_tokens,
            "mean": round(statistics.fmean(self.prompt_tokens), 1) if self.turns else None,
            "max": max(self.prompt_tokens, default=None),
            "per_turn": self.prompt_tokens,
        }

    def to_json(self, word: Callable[[Notice], str]) -> dict[str, Any]:
        """The run in replay's and eval's --json; `word` words each notice."""
        mean_probe, max_probe = self.probe_tokens()
        return {
            "strategy": {"name": self.strategy, "params": self.params, "label": self.label},
            "session": self.session,
            "turns": self.turns,
            "probes_only": self.probes_only,
            "prompt_tokens": self._prompt_tokens_json(),
            "strategy_model_calls": self.model_calls,
            "strategy_model_calls_by_purpose": self.strategy_calls,
            "chat_model_calls": self.chat_calls,
            "summary_versions": self.summary_versions,
            "facts": self.facts,
            "pinned": self.pinned,
            "notices": [word(n) for n in self.notices],
            "eval": {
                "probes": len(self.probes),
                "id_recall": shown_share(self.id_recall()),
                "text_recall": shown_share(self.text_recall()),
                "answer_recall": shown_share(self.answer_recall()),
                "context_tokens": {
                    "mean": None if mean_probe is None else round(mean_probe, 1),
                    "max": max_probe,
                },
                "per_probe": [p.to_json() for p in self.probes],
            },
        }


@dataclass(frozen=True)
class FailedRun:
    """A strategy whose own code (a plugin's) failed partway through its run: the other
    strategies' runs stand, and this one is told as failed, not scored."""

    label: str
    error: StrategyFailed


class RecallKind(StrEnum):
    """Which recall a figure or a --min-recall gate is: the lower of id and text recall (a
    plain `--min-recall X`), or one of them (`id=X`, `text=X`: on a set whose expected
    text is paraphrase, text recall stays low whatever the memory keeps)."""

    LOWER = "recall"
    ID = "id"
    TEXT = "text"

    def of(self, id_recall: float | None, text_recall: float | None) -> float | None:
        if self is RecallKind.ID:
            return id_recall
        if self is RecallKind.TEXT:
            return text_recall
        return lower_recall(id_recall, text_recall)


@dataclass(frozen=True)
class RecallGate:
    """`--min-recall [id=|text=]X`: the recall `kind` of every strategy must reach `minimum`."""

    kind: RecallKind
    minimum: float


def lower_recall(id_recall: float | None, text_recall: float | None) -> float | None:
    """The lower of id and text recall, either may be missing: a run's one recall figure."""
    values = [v for v in (id_recall, text_recall) if v is not None]
    return min(values) if values else None


def _share(found: int, expected: int) -> float | None:
    # Exact: --min-recall compares this, and 2/3 rounded to 0.6667 would pass 0.66667.
    return found / expected if expected else None


def shown_share(value: float | None) -> float | None:
    """A recall as JSON and MCP give it: four decimals, rounded only for showing."""
    return None if value is None else round(value, 4)


# -- scoring ---------------------------------------------------------------------


def score_probe(
    probe: Probe, context: Context, stored_ids: dict[str, int], after_turn: int,
    replaced: Replaced | None = None,
) -> ProbeResult:
    in_context = {
        m.id: m.content for p in context.parts if p.kind in MEMORY_PARTS for m in p.messages
        if m.id is not None
    }
    replaced = replaced or Replaced()
    found_ids = [i for i in probe.expect_ids
                 if stored_ids.get(i) in in_context and i not in replaced.ids]
    # Compared as the word index compares (full-width forms as ASCII, accents and marks
    # folded, any case): ＯＲＤ７７３１ in the context is ORD7731 expected. Each message
    # on its own: joined, "ABC\nDEF" would be found across the end of one and the start
    # of the next, which no message says. Whole words and numbers (expected_text.mentions): Tom is
    # not recalled by Tomorrow, nor 950 by 9500.
    memory_texts = [expected_text.compared(m.content)
                    for p in context.parts if p.kind in MEMORY_PARTS for m in p.messages]
    found_text = [t for t in probe.expect_text if t not in replaced.text
                  and any(expected_text.mentions(text, expected_text.compared(t))
                          for text in memory_texts)]
    return ProbeResult(probe.question, after_turn, list(probe.expect_ids), found_ids,
                       list(probe.expect_text), found_text, context.tokens,
                       replaced_ids=list(replaced.ids), replaced_text=list(replaced.text))
