"""`chatmem eval DIR --jobs N`: every transcript of a folder, each in its own process.

Each transcript is replayed in a worker process (its own embedder, its own
memory), N at a time. A line per transcript is printed as it finishes, so a
Ctrl-C keeps what was printed and then prints the aggregate of what finished.
On a terminal the bar also moves within transcripts: each worker sends how much
of its transcript is done through a queue the parent reads.
Results do not depend on --jobs: --json lists the transcripts in file order.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from chatmem.cli.gates import behind_error, check_gates, unanswered_error
from chatmem.cli.output import consoles, print_json
from chatmem.errors import ExitCode, MemoryBehind, ProbesUnanswered, TranscriptError

if TYPE_CHECKING:
    from rich.console import Console

    from chatmem.evaluation.corpus import StrategyTotals
    from chatmem.evaluation.recording import Tokenizer
    from chatmem.evaluation.replay import Progress
    from chatmem.evaluation.scoring import RecallGate, StrategyRun
    from chatmem.render.progress import TaskBar

SUFFIXES = (".jsonl", ".json")
Evaluate = Callable[["CorpusJob"], "TranscriptResult"]
Ahead = Callable[[Any, Sequence["CorpusJob"], "Console"], list["CorpusJob"]]
Within = Callable[[str, float], None]
"""A transcript's path and how much of it is done (0 to 1)."""
_within: Within | None = None
"""Where this process sends its transcript's progress: set in a worker by the pool's
initializer, in the parent while it evaluates inline; None when nothing shows it."""


@dataclass(frozen=True)
class CorpusJob:
    """What a worker needs to evaluate one transcript: picklable, settings by their source."""

    path: str
    strategies: tuple[str, ...]
    params: tuple[str, ...]
    config: Path | None
    db: str | None
    provider: str | None
    model: str | None
    answer: bool
    with_user_facts: bool
    probes_only: bool = False
    known: tuple[tuple[str, bool, bytes], ...] = ()
    """Vectors embedded ahead by other processes, with no cache file to find them in
    (cli.corpus_embedding): each text, whether a query, its float32 vector."""


@dataclass
class TranscriptResult:
    """One transcript's runs and its --json object, or why it could not be evaluated."""

    path: str
    data: dict[str, Any] | None = None
    runs: list[StrategyRun] | None = None
    error: str | None = None
    code: int = int(ExitCode.USAGE)
    """The exit code of `error`, as `eval FILE` exits on it: 2 for a transcript that cannot
    be read, 1 for a strategy's code or the model failing."""
    seconds: float = 0.0
    """How long its worker took on it (not the time since the corpus run began)."""


def transcript_files(directory: Path) -> list[Path]:
    """The transcripts of a folder, in file-name order (not recursive)."""
    files = sorted(p for p in directory.iterdir() if p.is_file()
                   and p.suffix.lower() in SUFFIXES)  # SUP.JSONL too, as eval FILE reads it
    if not files:
        raise TranscriptError(f"{directory}: no transcript files (.jsonl, .json) in the folder")
    return files


def largest_first(files: Sequence[Path]) -> list[Path]:
    """`files`, the largest first (the totals and JSON keep the folder's order)."""
    return sorted(files, key=lambda f: f.stat().st_size, reverse=True)


def _start_worker(queue: Any) -> None:
    # The parent handles Ctrl-C and ends the workers: no traceback from each of them.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    global _within
    if queue is not None:
        def send(path: str, done: float) -> None:
            queue.put((path, done))

        _within = send


def transcript_progress(job: CorpusJob) -> Progress | None:
    """The replay's progress for `job`'s transcript, sent on as the share of it done (a
    hundred times at most: each is a message to the parent); None when nothing shows it."""
    send = _within
    if send is None:
        return None
    labels: list[str] = []
    sent = -1

    def advance(label: str, done: int, total: int) -> None:
        nonlocal sent
        if label not in labels:
            labels.append(label)  # the strategies run one after the other
        share = (labels.index(label) + done / max(total, 1)) / max(len(job.strategies),
                                                                   len(labels))
        if int(share * 100) != sent:
            sent = int(share * 100)
            send(job.path, share)

    return advance


@dataclass
class _Pool:
    """The worker processes, and the queue they send progress through (None when nothing
    shows it: unread, a full queue would keep a worker from ending)."""

    pool: Any
    queue: Any


@contextmanager
def _workers(workers: int, progress: bool) -> Iterator[_Pool | None]:
    """A pool of `workers` processes, or None for one (everything runs inline)."""
    if workers <= 1:
        yield None
        return
    import multiprocessing

    from chatmem.child_processes import safe_path_children

    context = multiprocessing.get_context("spawn")
    queue = context.Queue() if progress else None
    # spawn: a worker starts clean, without the parent's threads or open files; a worker
    # started again while the pool runs inherits the safe path too.
    with safe_path_children():
        pool = context.Pool(workers, initializer=_start_worker, initargs=(queue,))
        try:
            yield _Pool(pool, queue)
            pool.close()
        finally:
            pool.terminate()
            pool.join()
            if queue is not None:
                queue.close()
                queue.cancel_join_thread()


@contextmanager
def _results(jobs: Sequence[CorpusJob], evaluate: Evaluate, workers: _Pool | None,
             within: Within | None = None) -> Iterator[Iterator[TranscriptResult]]:
    """Results as they finish: inline without `workers`, else from their processes;
    `within` is told how far each transcript has got meanwhile."""
    global _within
    if workers is None:
        _within = within
        try:
            yield (evaluate(job) for job in jobs)
        finally:
            _within = None
        return
    stop = threading.Event()
    queue = workers.queue
    reader = threading.Thread(target=_read_progress, args=(queue, within, stop), daemon=True)
    if queue is not None and within is not None:
        reader.start()
    try:
        yield workers.pool.imap_unordered(evaluate, jobs)
    finally:
        stop.set()
        if reader.is_alive():
            reader.join()


def _read_progress(queue: Any, within: Within, stop: threading.Event) -> None:
    """Pass the workers' progress on until `stop`; polled, not ended by a last message: a
    worker the pool terminated halfway through sending could leave the queue stuck."""
    import queue as queues

    while not stop.is_set():
        try:
            path, done = queue.get(timeout=0.2)
        except queues.Empty:
            continue
        within(path, done)


@dataclass
class _Shown:
    """Where a corpus run's lines go while its progress shows: `out` and `err`, or, with
    both on the terminal the bar is drawn on, the bar's console (a line printed past a
    live bar would be glued onto it)."""

    out: Console
    err: Console
    advance: Callable[[TranscriptResult], None]
    within: Within | None = None
    """How far a transcript has got: moves the bar (a pipe gets a line per transcript)."""


class _Shares:
    """The bar at the transcripts finished plus the share done of each one running. Told
    from the pool's reader thread as well as the main one."""

    def __init__(self, bar: TaskBar) -> None:
        self._bar, self._lock = bar, threading.Lock()
        self._finished: set[str] = set()
        self._running: dict[str, float] = {}

    def finished(self, result: TranscriptResult) -> None:
        with self._lock:
            self._finished.add(result.path)
            self._running.pop(result.path, None)
            self._show()

    def within(self, path: str, done: float) -> None:
        with self._lock:
            if path not in self._finished:  # a late message, read after its result
                self._running[path] = min(max(done, 0.0), 1.0)
                self._show()

    def _show(self) -> None:
        self._bar.update(len(self._finished) + sum(self._running.values()))


@contextmanager
def _progress(total: int) -> Iterator[_Shown]:
    """A bar on a terminal's stderr, else a line per finished transcript. A screen, not
    Rich's terminal: FORCE_COLOR makes a file one, and its bar's frames went into the file,
    the per-file lines to stderr and the "evaluated 1/2" lines nowhere."""
    from chatmem.render.terminal import on_screen

    out, err = consoles()
    done = 0
    if not on_screen(err):
        def line(result: TranscriptResult) -> None:
            nonlocal done
            done += 1
            what = "failed" if result.error is not None else "evaluated"
            err.print(f"{what} {done}/{total}: {Path(result.path).name} "
                      f"({result.seconds:.1f} s)",
                      style="dim", markup=False, soft_wrap=True)

        yield _Shown(out, err, line)
        return
    from chatmem.render.progress import task_progress

    with task_progress(err, "evaluating transcripts", total) as bar:
        shares = _Shares(bar)
        yield _Shown(bar.console if on_screen(out) else out, bar.console, shares.finished,
                     shares.within)


def eval_corpus(directory: Path, job: CorpusJob, evaluate: Evaluate, *, workers: int,
                json_out: bool, min_recall: Sequence[RecallGate] = (), report: Path | None = None,
                zone: str = "UTC", ahead: Ahead | None = None) -> None:
    """Evaluate every transcript of `directory` and print per-transcript lines and totals
    (and write the HTML report of them to `report`). With several workers, `ahead` first
    readies the jobs with their pool (cli.corpus_embedding.embedded_ahead).

    `evaluate` runs in the worker processes: a module-level function, so they can import it.
    """
    from chatmem.evaluation.corpus import aggregate
    from chatmem.render.corpus import corpus_table, transcript_caveats, transcript_lines

    files = transcript_files(directory)
    # In parallel the longest go first, so the last to finish is a short one rather than
    # a long one left alone on one core; one worker keeps the folder's order.
    jobs = [replace(job, path=str(f)) for f in (largest_first(files) if workers > 1 else files)]
    out, err = consoles()
    finished: dict[str, TranscriptResult] = {}
    interrupted = False
    shown: set[str] = set()

    def show(result: TranscriptResult, lines_to: Console = out, errors_to: Console = err) -> None:
        shown.add(result.path)
        if result.error is not None:
            errors_to.print(f"error: {result.error}", markup=False, soft_wrap=True)
        elif not json_out and result.runs is not None:
            name = Path(result.path).name
            for line in transcript_lines(name, result.runs, _tokenizer(result)):
                lines_to.print(line, soft_wrap=True)
            for caveat in transcript_caveats(name, result.runs):
                errors_to.print(caveat, markup=False, soft_wrap=True, style="yellow")
        if result.runs is not None and (unanswered := unanswered_error(result.runs)):
            errors_to.print(f"error: {Path(result.path).name}: {unanswered}", markup=False,
                            soft_wrap=True)
        if result.runs is not None and (behind := behind_error(result.runs)):
            errors_to.print(f"error: {Path(result.path).name}: {behind}", markup=False,
                            soft_wrap=True)

    from chatmem.render.terminal import on_screen

    try:
        with _workers(workers, on_screen(err)) as pool:
            if pool is not None and ahead is not None:
                jobs = ahead(pool.pool, jobs, err)
            with (_progress(len(jobs)) as shown_on,
                  _results(jobs, evaluate, pool, shown_on.within) as results):
                for result in results:
                    finished[result.path] = result
                    show(result, shown_on.out, shown_on.err)
                    shown_on.advance(result)
    except KeyboardInterrupt:
        interrupted = True
        # A result that arrived as Ctrl-C did is in the totals: its lines come first.
        for result in [r for path, r in finished.items() if path not in shown]:
            show(result)
    ordered = [finished[str(f)] for f in files if str(f) in finished]
    scored = [r for r in ordered if r.runs is not None]
    totals = aggregate([r.runs for r in scored if r.runs is not None])
    data = corpus_json(str(directory), files, ordered, totals, complete=not interrupted,
                       zone=zone)
    if report is not None:
        from chatmem.render.corpus_report import corpus_report

        write_report(report, corpus_report(data))
    if json_out:
        print_json(data)
    elif scored:
        counted = [(Path(r.path).name, t) for r in scored if (t := _tokenizer(r)) is not None]
        out.print(corpus_table(totals, f"eval of {len(scored)} transcripts in {directory}",
                               counted, zone))
    if interrupted:
        err.print(f"interrupted: {len(ordered)} of {len(files)} transcripts evaluated",
                  markup=False, soft_wrap=True)
        raise typer.Exit(int(ExitCode.INTERRUPTED))
    if failed := [r.code for r in ordered if r.error is not None]:
        # As `eval FILE` would exit on each (a plugin's strategy failing exited 2, as if the
        # command were mistyped); an unreadable transcript's 2 wins over a failure's 1, as
        # a piped chat's refused command wins over its failed turn.
        raise typer.Exit(max(failed))
    check_gates(min_recall, [(t.label, t.id_recall, t.text_recall) for t in totals])
    if any(r.runs is not None and unanswered_error(r.runs) for r in ordered):
        raise typer.Exit(int(ProbesUnanswered.exit_code))
    if any(r.runs is not None and behind_error(r.runs) for r in ordered):
        raise typer.Exit(int(MemoryBehind.exit_code))


def _tokenizer(result: TranscriptResult) -> Tokenizer | None:
    """What a transcript's counts were made with, as its --json object says."""
    from chatmem.evaluation.recording import Tokenizer

    said = (result.data or {}).get("tokenizer")
    return None if said is None else Tokenizer(**said)


def corpus_json(source: str, files: Sequence[Path], results: Sequence[TranscriptResult],
                totals: Sequence[StrategyTotals], *, complete: bool,
                zone: str = "UTC") -> dict[str, Any]:
    """`eval DIR --json` (docs/chatmem.schema.json, $defs/corpus); `zone`: the time zone
    every transcript's days were read in."""
    return {
        "command": "eval",
        "source": source,
        "timezone": zone,
        "files": len(files),
        "complete": complete,
        "transcripts": [r.data for r in results if r.data is not None],
        "errors": [{"path": r.path, "error": r.error} for r in results if r.error is not None],
        "aggregate": [t.to_json() for t in totals],
    }


def write_report(path: Path, html: str) -> None:
    """Write an HTML report (the user's alone) and say where; a failure is one line."""
    from chatmem.cli.output import write_private

    try:
        write_private(path, html)
    except OSError as e:
        raise TranscriptError(f"{path}: cannot write the report: {e.strerror}") from None
    consoles()[1].print(f"wrote {path}", style="dim", markup=False, soft_wrap=True)

