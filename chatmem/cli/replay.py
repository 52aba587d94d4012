"""`chatmem replay` and `chatmem eval`: one conversation, several strategies, measured."""

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from chatmem.cli.comparing import evaluate_transcript, outcome_json, run_comparison
from chatmem.cli.completion import session_names, strategy_specs
from chatmem.cli.gates import (
    behind_error,
    check_gates,
    exit_if_cut,
    exit_if_failed,
    recall_gates,
    say_failed,
    unanswered_error,
)
from chatmem.cli.grammar import file_name, utf8_argument
from chatmem.cli.opening import open_workspace, registries, settings_from
from chatmem.cli.options import (
    ConfigOption,
    DbOption,
    JsonOption,
    ModelOption,
    ParamOption,
    ProviderOption,
    parse_params,
)
from chatmem.cli.output import (
    consoles,
    handles_errors,
    print_json,
    stdin_transcript,
)
from chatmem.errors import ExitCode, TranscriptError

if TYPE_CHECKING:
    from chatmem.app.evaluation import Comparison
    from chatmem.evaluation.scoring import RecallGate

SourceArgument = Annotated[
    str, typer.Argument(help="A transcript file (.jsonl, .json; - reads stdin) or a session name.",
                        autocompletion=session_names, callback=file_name)
]
EvalSourceArgument = Annotated[
    str, typer.Argument(help="A transcript file (.jsonl, .json; - reads stdin), a session "
                             "name, or a folder of transcripts.", callback=file_name)
]
StrategiesOption = Annotated[
    list[str] | None,
    typer.Option("--strategy", "-s", show_default=False,
                 metavar="NAME[:K=V,...]", autocompletion=strategy_specs,
                 help="Strategy to run, repeatable; parameters after a colon: window:k=2. "
                      "Default: one of each kind of memory (those `chatmem strategies "
                      "--json` marks in_default_eval)."),
]
EvalStrategiesOption = Annotated[
    list[str] | None,
    typer.Option("--strategy", "-s", show_default=False,
                 metavar="NAME[:K=V,...]", autocompletion=strategy_specs,
                 help="Strategy to score, repeatable; parameters after a colon: window:k=2. "
                      "Default: one of each kind of memory (those `chatmem strategies "
                      "--json` marks in_default_eval)."),
]
WithUserFactsOption = Annotated[
    bool, typer.Option("--with-user-facts",
                       help="Let strategies read your user-profile facts (default: the "
                            "conversation alone, so results do not depend on other sessions).")
]
ReportOption = Annotated[
    Path | None,
    typer.Option("--report", show_default=False,
                 help="Also write a self-contained HTML report."),
]


VerboseOption = Annotated[
    bool, typer.Option("--verbose", "-v",
                       help="Print every memory notice (each summary version), not a count.")]


@handles_errors
def replay_command(
    source: SourceArgument,
    strategy: StrategiesOption = None,
    param: ParamOption = None,
    keep_replies: Annotated[
        bool | None,
        typer.Option("--keep-replies/--regenerate", show_default=False,
                     help="Reuse the recorded replies (default when the transcript has them) "
                          "or ask the model for new ones."),
    ] = None,
    save_as: Annotated[
        str | None,
        typer.Option("--save-as", show_default=False,
                     help="Store each replay as a session: NAME, or NAME-STRATEGY for several."),
    ] = None,
    with_user_facts: WithUserFactsOption = False,
    report: ReportOption = None,
    verbose: VerboseOption = False,
    json_out: JsonOption = False,
    provider: ProviderOption = None,
    model: ModelOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Replay a conversation under each strategy and compare prompt tokens and model calls.

    Counts use the provider, model and tokenizer the conversation was recorded
    with unless --provider or --model says otherwise.

    Without --strategy it compares one of each kind of memory, as eval does.

    \b
    Example: chatmem replay sessions/support.jsonl -s buffer -s window:k=3
    """

    settings = settings_from(config, db, provider, model)
    outcome = run_comparison(source, strategy or registries().strategies.default_eval(), param,
                             settings, keep=keep_replies, save_as=save_as,
                             transcript=stdin_transcript() if source == "-" else None,
                             explicit=provider is not None or model is not None,
                             with_user_facts=with_user_facts, config=config)
    _show_outcome("replay", source, outcome, report=report, json_out=json_out,
                  verbose=verbose)
    exit_if_failed(outcome.failed)
    if (behind := behind_error(outcome.runs)) is not None:
        raise behind


def _show_outcome(command: str, source: str, outcome: "Comparison", *, report: Path | None,
                  json_out: bool, verbose: bool) -> None:
    """What replay or eval prints of `outcome` (writes to `report`): failed, cut (exit 130)."""
    from chatmem.render import compare

    data = outcome_json(command, source, outcome)
    if report:
        _write_report(report, data)
    if json_out:
        print_json(data)
    else:
        out, err = consoles()
        view = compare.replay_view if command == "replay" else compare.eval_view
        out.print(view(outcome.runs, source, outcome.tokenizer.describe(), zone=outcome.zone))
        for line in compare.replay_notices(outcome.runs, verbose=verbose):
            err.print(line, style="dim", markup=False, soft_wrap=True)
    say_failed(outcome.failed)
    exit_if_cut(outcome)


def _write_report(path: Path, data: dict[str, Any]) -> None:
    from chatmem.cli.corpus import write_report
    from chatmem.render.report import html_report

    write_report(path, html_report(data))


@handles_errors
def eval_command(
    source: EvalSourceArgument,
    strategy: EvalStrategiesOption = None,
    param: ParamOption = None,
    answer: Annotated[
        bool, typer.Option("--answer", help="Also ask the model each probe and check its answer.")
    ] = False,
    probes_only: Annotated[
        bool, typer.Option("--probes-only",
                           help="Build a context only at the probes: a turn with a recorded "
                                "reply is stored as it is, so a first run embeds far less; "
                                "no prompt tokens per turn are reported.")
    ] = False,
    min_recall: Annotated[
        list[str] | None,
        typer.Option("--min-recall", show_default=False, metavar="[id=|text=]X",
                     help="Exit 1 when any strategy's recall is below X: a plain X gates the "
                          "lower of id and text recall, id=X or text=X that one alone "
                          "(repeatable)."),
    ] = None,
    with_user_facts: WithUserFactsOption = False,
    report: ReportOption = None,
    verbose: VerboseOption = False,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", min=1, show_default=False, metavar="N",
                     help="For a folder: transcripts evaluated at once, each in its own "
                          "process (default: the number of cores). A single transcript "
                          "runs in one process whatever N is."),
    ] = None,
    json_out: JsonOption = False,
    provider: ProviderOption = None,
    model: ModelOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Score what each strategy remembers at the probes of a transcript or a folder of them.

    A probe is a line of the transcript: {"probe": "What is my order number?",
    "expect_ids": ["u3"], "expect_text": ["KW-58213"]}, asked at that point (README,
    Compare strategies: the transcript format; docs/compare.md: how it is scored).

    A strategy that recalls by meaning embeds every message on a first (cold) run;
    the vectors are cached (~/.cache/chatmem/vectors.sqlite), so a second run of the
    same transcripts embeds nothing again and is much faster.

    \b
    Example: chatmem eval sessions/long-chat.jsonl -s buffer -s window:k=2
    """

    gates = recall_gates(min_recall or ())
    strategy = strategy or registries().strategies.default_eval()
    if Path(source).is_dir():
        _eval_folder(Path(source), strategy, param, answer=answer, probes_only=probes_only,
                     min_recall=gates, with_user_facts=with_user_facts, report=report,
                     jobs=jobs, json_out=json_out, provider=provider, model=model, db=db,
                     config=config)
        return
    from chatmem.app.evaluation import load_source

    settings = settings_from(config, db, provider, model)
    if source == "-":
        transcript = stdin_transcript()
    else:
        with open_workspace(settings, create=False) as ws:
            transcript = load_source(ws, source, utf8_argument(source))
    if not transcript.probes:
        probe = '{"probe": ..., "expect_text": [...]}'
        if source != "-" and not Path(source).is_file():
            # A session has only the probes it was imported with, and nowhere to add one.
            name = utf8_argument(source)
            raise TranscriptError(
                f"session {name} has no probe lines to evaluate: export it (chatmem sessions"
                f" export {name} {name}.jsonl), add {probe} lines, and eval that file")
        raise TranscriptError(f"{source}: no probe lines to evaluate (add {probe})")
    outcome = run_comparison(source, strategy, param, settings, keep=None, answer=answer,
                             transcript=transcript,
                             explicit=provider is not None or model is not None,
                             with_user_facts=with_user_facts, probes_only=probes_only)
    _show_outcome("eval", source, outcome, report=report, json_out=json_out,
                  verbose=verbose)
    unanswered = unanswered_error(outcome.runs)
    try:
        check_gates(gates, [(r.label, r.id_recall(), r.text_recall()) for r in outcome.runs])
    except typer.Exit as e:
        if e.exit_code == ExitCode.BELOW_THRESHOLD and unanswered is not None:
            raise unanswered from None
        raise
    if unanswered is not None:
        raise unanswered
    exit_if_failed(outcome.failed)
    if (behind := behind_error(outcome.runs)) is not None:
        raise behind


def _eval_folder(directory: Path, strategy: Sequence[str], param: Sequence[str] | None, *,
                 answer: bool, probes_only: bool, min_recall: "Sequence[RecallGate]",
                 with_user_facts: bool,
                 report: Path | None, jobs: int | None, json_out: bool, provider: str | None,
                 model: str | None, db: str | None, config: Path | None) -> None:
    import os

    from chatmem.cli.corpus import CorpusJob, eval_corpus

    if report is not None and not report.parent.is_dir():
        # Said before the run, not after every transcript has been evaluated.
        raise TranscriptError(f"{report}: cannot write the report: no folder {report.parent}")
    from chatmem.app.evaluation import check_comparable

    # Checked here, once, so a typo or a strategy given twice is one line and not one per
    # transcript.
    from chatmem.timezones import zone_name

    shared = parse_params(param)
    strategies = registries().strategies
    settings = settings_from(config, db, provider, model)
    check_comparable([strategies.parse(spec, shared) for spec in strategy], settings,
                     strategies)
    job = CorpusJob("", tuple(strategy), tuple(param or ()), config, db, provider, model,
                    answer, with_user_facts, probes_only)
    from chatmem.cli.corpus_embedding import embedded_ahead

    eval_corpus(directory, job, evaluate_transcript, workers=jobs or os.cpu_count() or 1,
                json_out=json_out, min_recall=min_recall, report=report,
                zone=zone_name(settings.zone), ahead=embedded_ahead)


