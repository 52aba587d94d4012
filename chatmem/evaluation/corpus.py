"""Several transcripts evaluated as one corpus: per strategy, what they remembered together.

Recall over a corpus is micro recall: every expected id (or text) of every probe
counts once, so a transcript with many probes weighs more than one with few, as
its evidence does. The mean of the transcripts' own recalls is kept beside it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chatmem.evaluation.scoring import StrategyRun, lower_recall, shown_share


@dataclass(frozen=True)
class StrategyTotals:
    """One strategy over every transcript that ran it."""

    label: str
    transcripts: int
    probes: int
    expected_ids: int
    found_ids: int
    expected_text: int
    found_text: int
    mean_recall: float | None
    """The mean of each transcript's recall (the lower of its id and text recall)."""
    context_tokens_mean: float | None
    """Over every probe of every transcript."""
    context_tokens_max: int | None
    prompt_tokens_mean: float | None
    """Over every replayed turn of every transcript."""

    @property
    def id_recall(self) -> float | None:
        return _share(self.found_ids, self.expected_ids)

    @property
    def text_recall(self) -> float | None:
        return _share(self.found_text, self.expected_text)

    @property
    def recall(self) -> float | None:
        """The lower of micro id and text recall: what --min-recall checks on a corpus."""
        return lower_recall(self.id_recall, self.text_recall)

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "transcripts": self.transcripts,
            "probes": self.probes,
            "id_recall": shown_share(self.id_recall),
            "text_recall": shown_share(self.text_recall),
            "expected_ids": self.expected_ids,
            "found_ids": self.found_ids,
            "expected_text": self.expected_text,
            "found_text": self.found_text,
            "mean_recall": self.mean_recall,
            "context_tokens": {"mean": self.context_tokens_mean, "max": self.context_tokens_max},
            "prompt_tokens_mean": self.prompt_tokens_mean,
        }


def aggregate(outcomes: Sequence[Sequence[StrategyRun]]) -> list[StrategyTotals]:
    """Per strategy label, in the order labels first appear, the totals of its runs."""
    by_label: dict[str, list[StrategyRun]] = {}
    for runs in outcomes:
        for run in runs:
            by_label.setdefault(run.label, []).append(run)
    return [_totals(label, runs) for label, runs in by_label.items()]


def _totals(label: str, runs: Sequence[StrategyRun]) -> StrategyTotals:
    probes = [p for run in runs for p in run.probes]
    tokens = [p.tokens for p in probes]
    prompts = [t for run in runs for t in run.prompt_tokens]
    recalls = [r for r in (run.recall() for run in runs) if r is not None]
    return StrategyTotals(
        label=label,
        transcripts=len(runs),
        probes=len(probes),
        expected_ids=sum(len(p.scored_ids()) for p in probes),
        found_ids=sum(len(p.found_ids) for p in probes),
        expected_text=sum(len(p.scored_text()) for p in probes),
        found_text=sum(len(p.found_text) for p in probes),
        mean_recall=round(statistics.fmean(recalls), 4) if recalls else None,
        context_tokens_mean=round(statistics.fmean(tokens), 1) if tokens else None,
        context_tokens_max=max(tokens, default=None),
        prompt_tokens_mean=round(statistics.fmean(prompts), 1) if prompts else None,
    )


def _share(found: int, expected: int) -> float | None:
    # Exact, as a single run's (scoring._share): --min-recall compares it.
    return found / expected if expected else None
