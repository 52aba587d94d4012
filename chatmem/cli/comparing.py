"""One transcript compared under several strategies, for `chatmem replay` and `chatmem eval`
(cli/replay.py): the run in a workspace, its progress bar, its JSON, and a folder's worker."""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chatmem.cli.grammar import utf8_argument
from chatmem.cli.opening import open_workspace, registries, settings_from
from chatmem.cli.options import parse_params
from chatmem.cli.output import consoles, done_for_good, stopped_as_by_ctrl_c, warn_if_dated_back
from chatmem.errors import TranscriptError

if TYPE_CHECKING:
    from chatmem.app import Workspace
    from chatmem.app.evaluation import Comparison
    from chatmem.cli.corpus import CorpusJob, TranscriptResult
    from chatmem.config.settings import Settings
    from chatmem.evaluation.replay import Progress
    from chatmem.evaluation.scoring import StrategyRun
    from chatmem.transcripts.format import Transcript

PROGRESS_AFTER_STEPS = 50


@contextmanager
def progress_bar(steps: int) -> "Iterator[Progress | None]":
    """A Rich progress bar on stderr for long replays; nothing when stderr is not a screen
    (a file or pipe, FORCE_COLOR or not)."""
    from chatmem.render.terminal import on_screen

    err = consoles()[1]
    if steps < PROGRESS_AFTER_STEPS or not on_screen(err):
        yield None
        return
    from chatmem.render.progress import replay_progress

    with replay_progress(err) as advance:
        yield advance


def run_comparison(
    source: str, strategy: Sequence[str], param: Sequence[str] | None, settings: "Settings",
    *, keep: bool | None, explicit: bool, with_user_facts: bool, save_as: str | None = None,
    answer: bool = False, transcript: "Transcript | None" = None, show_progress: bool = True,
    probes_only: bool = False, progress: "Progress | None" = None, config: Path | None = None,
    **embedding: Any,
) -> "Comparison":
    from chatmem.app.evaluation import compare_strategies, load_source

    shared = parse_params(param)
    specs = [registries().strategies.parse(s, shared) for s in strategy]
    # A kill or a closed terminal undoes a save as Ctrl-C does (nothing else to undo).
    with (stopped_as_by_ctrl_c() if save_as else nullcontext(),
          open_workspace(settings, create=bool(save_as)) as ws):
        transcript = transcript or load_source(ws, source, utf8_argument(source))
        warn_if_dated_back(transcript)
        steps = len(transcript.items) * len(specs) if show_progress else 0
        with progress_bar(steps) as bar:
            compared = compare_strategies(ws, transcript, specs, source=source, keep=keep,
                                          explicit=explicit, with_user_facts=with_user_facts,
                                          save_as=save_as, answer=answer,
                                          probes_only=probes_only, progress=progress or bar,
                                          # not a folder's transcript's, nor a save's
                                          finished_on_ctrl_c=show_progress and not save_as,
                                          **embedding)
        if save_as:
            done_for_good()  # the sessions are saved: what is left is saying so
            # In this workspace: another would ask a typed key again, the sessions saved.
            _start_backlogs(ws, config, compared.runs)
        return compared


def _start_backlogs(ws: "Workspace", config: Path | None,
                    runs: "Sequence[StrategyRun]") -> None:
    """Saved sessions that recall by meaning get vectors for their messages in the
    background."""
    from chatmem.app.indexing import start_backlogs
    from chatmem.render.sessions import backlog_lines

    started = start_backlogs(ws, config, [r.session for r in runs if r.session])
    for line in backlog_lines(started):
        consoles()[1].print(line, markup=False, soft_wrap=True)


def outcome_json(command: str, source: str, outcome: "Comparison") -> dict[str, Any]:
    """The one JSON shape of replay and eval (docs/chatmem.schema.json)."""
    from chatmem.render.compare import run_notice_text
    from chatmem.render.errors import error_text

    transcript = outcome.transcript
    return {
        "command": command,
        "source": source,
        "title": transcript.title,
        "turns": outcome.turns_replayed,
        "probes": len(transcript.probes),
        "keep_replies": outcome.keep_replies,
        "tokenizer": outcome.tokenizer.to_json(),
        "timezone": outcome.zone,
        "strategies": [r.to_json(run_notice_text) for r in outcome.runs],
        "failed": [{"strategy": f.label, "error": error_text(f.error)} for f in outcome.failed],
        "cut": list(outcome.cut),
    }


def evaluate_transcript(job: "CorpusJob") -> "TranscriptResult":
    """A worker's task; a chatmem error is returned as its one line, not raised."""
    import time

    from chatmem.cli.corpus import TranscriptResult, transcript_progress
    from chatmem.cli.corpus_embedding import known_vectors
    from chatmem.errors import ChatmemError
    from chatmem.render.errors import error_text
    from chatmem.transcripts.reader import read_transcript

    started = time.monotonic()
    try:
        settings = settings_from(job.config, job.db, job.provider, job.model)
        transcript = read_transcript(Path(job.path))
        if not transcript.probes:
            raise TranscriptError(f"{job.path}: no probe lines to evaluate")
        outcome = run_comparison(job.path, job.strategies, job.params, settings, keep=None,
                                 answer=job.answer, transcript=transcript,
                                 explicit=job.provider is not None or job.model is not None,
                                 with_user_facts=job.with_user_facts, show_progress=False,
                                 probes_only=job.probes_only, progress=transcript_progress(job),
                                 known=known_vectors(job))
    except ChatmemError as e:
        # As the CLI says it (a plugin's failure names the plugin): it is printed as it is.
        return TranscriptResult(job.path, error=error_text(e), code=int(e.exit_code),
                                seconds=time.monotonic() - started)
    if outcome.failed:
        # A folder's figures are over every strategy's runs: one missing fails the file,
        # as before.
        failed = outcome.failed[0].error
        return TranscriptResult(job.path, error=error_text(failed), code=int(failed.exit_code),
                                seconds=time.monotonic() - started)
    return TranscriptResult(job.path, outcome_json("eval", job.path, outcome), outcome.runs,
                            seconds=time.monotonic() - started)
