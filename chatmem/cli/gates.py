"""`--min-recall`: the recall gates `eval` FILE and `eval` DIR exit on, the error
naming the probes a model gave no answer to, and the exit of a replay or an eval one of
whose strategies failed, fell behind (its memory updates failed) or Ctrl-C cut."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import typer

from chatmem.cli.output import consoles, fail
from chatmem.errors import ExitCode, MemoryBehind, ProbesUnanswered, UsageError

if TYPE_CHECKING:
    from chatmem.app.evaluation import Comparison
    from chatmem.evaluation.scoring import FailedRun, RecallGate, StrategyRun


def recall_gates(values: Sequence[str]) -> list[RecallGate]:
    """`--min-recall` values: `X` (the lower of id and text recall), `id=X`, `text=X`."""
    from chatmem.evaluation.scoring import RecallGate, RecallKind

    gates = []
    for value in values:
        name, _, number = value.rpartition("=")
        kind = {"": RecallKind.LOWER, "id": RecallKind.ID,
                "text": RecallKind.TEXT}.get(name.strip().lower())
        try:
            minimum = float(number)
        except ValueError:
            minimum = float("nan")
        if kind is None or not 0.0 <= minimum <= 1.0:  # nan too
            raise UsageError(f"--min-recall must be a recall from 0 to 1 (X, id=X or text=X),"
                             f" got {value!r}")
        gates.append(RecallGate(kind, minimum))
    return gates


def unanswered_error(runs: Sequence[StrategyRun]) -> ProbesUnanswered | None:
    """The error saying which probes the model gave no answer to, if any did."""
    failed = [(run.label, number, probe.answer_error) for run in runs
              for number, probe in enumerate(run.probes, 1) if probe.answer_error is not None]
    if not failed:
        return None
    label, number, error = failed[0]
    asked = sum(len(run.probes) for run in runs)
    more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
    return ProbesUnanswered(f"{label}: probe {number} got no answer{more}, {len(failed)} of"
                            f" {asked} left out of answer recall: {error}")


def behind_error(runs: Sequence[StrategyRun]) -> MemoryBehind | None:
    """The error saying which strategies' memory updates failed, if any did: a script must
    tell their figures (printed, each failure said above them) from a run that kept up."""
    behind = [(run.label, failed, run.turns) for run in runs
              if (failed := run.updates_failed())]
    if not behind:
        return None
    from chatmem.render.counts import counted

    label, failed, turns = behind[0]
    more = (f" (and {counted(len(behind) - 1, 'more strategy', 'more strategies')})"
            if len(behind) > 1 else "")
    return MemoryBehind(f"{label}: {counted(failed, 'memory update')} failed in"
                        f" {counted(turns, 'turn')}{more}: its figures are of a memory that did"
                        " not keep up")


def check_gates(gates: Sequence[RecallGate],
                recalls: Sequence[tuple[str, float | None, float | None]]) -> None:
    """Exit 1, saying which, when a strategy's (label, id recall, text recall) is below a
    gate: one line per gate missed. A gate on a recall no probe measured (no probe expects
    an id, or a text) is a mistake in the command, not a score of 0: exit 2, saying so."""
    from chatmem.evaluation.scoring import RecallKind
    from chatmem.render.compare import short_of

    missed = unmeasured = False
    for gate in gates:
        what = "recall" if gate.kind is RecallKind.LOWER else f"{gate.kind.value} recall"
        scored = [(label, gate.kind.of(ids, text)) for label, ids, text in recalls]
        absent = [label for label, value in scored if value is None]
        if absent:
            unmeasured = True
            option = (f"{gate.minimum}" if gate.kind is RecallKind.LOWER
                      else f"{gate.kind.value}={gate.minimum}")
            consoles()[1].print(f"--min-recall {option}: no {what} was measured (no probe"
                                f" expects what it counts): {', '.join(absent)}", markup=False,
                                soft_wrap=True)
        below = [(label, value) for label, value in scored
                 if value is not None and value < gate.minimum]
        if below:
            missed = True
            shown = ", ".join(f"{label} ({short_of(value, gate.minimum)})"
                              for label, value in below)
            consoles()[1].print(f"{what} below {gate.minimum}: {shown}", markup=False,
                                soft_wrap=True)
    if unmeasured:
        raise typer.Exit(int(ExitCode.USAGE))
    if missed:
        raise typer.Exit(int(ExitCode.BELOW_THRESHOLD))


def say_failed(failed: Sequence[FailedRun]) -> None:
    """One line on stderr for each strategy whose own code failed (a replay's or an eval's
    other results are printed); the command then ends with `exit_if_failed`."""
    from chatmem.render.errors import error_text

    for run in failed:
        fail(error_text(run.error), run.error.exit_code)


def exit_if_failed(failed: Sequence[FailedRun]) -> None:
    """Exit with the first failed strategy's code, if one failed."""
    if failed:
        raise typer.Exit(int(failed[0].error.exit_code))


def exit_if_cut(outcome: Comparison) -> None:
    """Ctrl-C stopped the run after some strategies finished (shown): which were not, and
    exit as an interrupt does."""
    if outcome.cut:
        done = len(outcome.runs) + len(outcome.failed)
        consoles()[1].print(
            f"interrupted: {done} of {done + len(outcome.cut)} strategies finished; cut: "
            + ", ".join(outcome.cut), markup=False, soft_wrap=True)
        raise typer.Exit(int(ExitCode.INTERRUPTED))
