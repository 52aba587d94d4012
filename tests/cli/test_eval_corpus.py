"""`chatmem eval DIR --jobs N`: a folder of transcripts, each in its own process."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_runner import invoke
from plugin_site import Install
from waiting import ctrl_c_reaches_it

from chatmem.cli.corpus import largest_first, transcript_files

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ROOT / "sessions"
SAMPLES = ("long-chat", "support", "travel-zh")
pytestmark = pytest.mark.usefixtures("hash_embedder")  # about aggregation, not ranking


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus")
    for name in SAMPLES:
        shutil.copy(SESSIONS / f"{name}.jsonl", path / f"{name}.jsonl")
    (path / "notes.txt").write_text("not a transcript", encoding="utf-8")
    return path


def evaluate(*args: str) -> Any:
    result = invoke("eval", *args, "--provider", "scripted", "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_jobs_1_and_2_give_the_same_results_and_the_aggregate_adds_up(folder: Path) -> None:
    strategies = ("-s", "window:k=2", "-s", "retrieval")
    one = evaluate(str(folder), *strategies, "--jobs", "1")
    two = evaluate(str(folder), *strategies, "--jobs", "2")
    assert one == two
    assert one["files"] == 3 and one["complete"] is True and one["errors"] == []
    assert [Path(t["source"]).stem for t in one["transcripts"]] == sorted(SAMPLES)
    # Each transcript's object is what `eval FILE` prints for it alone.
    alone = evaluate(str(folder / "support.jsonl"), *strategies)
    assert one["transcripts"][sorted(SAMPLES).index("support")]["strategies"] == alone[
        "strategies"]
    for row in one["aggregate"]:
        runs = [s["eval"] for t in one["transcripts"] for s in t["strategies"]
                if s["strategy"]["label"] == row["label"]]
        probes = [p for run in runs for p in run["per_probe"]]
        found = sum(len(p["found_ids"]) for p in probes)
        expected = sum(len(p["expect_ids"]) for p in probes)
        assert (row["found_ids"], row["expected_ids"]) == (found, expected)
        assert row["id_recall"] == round(found / expected, 4)
        assert row["probes"] == len(probes) == 28
        assert row["context_tokens"]["max"] == max(p["tokens"] for p in probes)
        assert row["context_tokens"]["mean"] == round(
            sum(p["tokens"] for p in probes) / len(probes), 1)
    labels = [row["label"] for row in one["aggregate"]]
    assert labels == ["window k=2", "retrieval"]
    assert one["aggregate"][1]["id_recall"] > one["aggregate"][0]["id_recall"]


def test_table_prints_a_line_per_transcript_and_a_row_per_strategy(folder: Path) -> None:
    result = invoke("eval", str(folder), "-s", "window", "--jobs", "1",
                    "--provider", "scripted")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[:3]] == [f"{n}.jsonl" for n in SAMPLES]
    assert "eval of 3 transcripts" in result.stdout
    # progress in a pipe: one line per finished transcript on stderr
    assert [line.split(":")[0] for line in result.stderr.splitlines()] == [
        "evaluated 1/3", "evaluated 2/3", "evaluated 3/3"]


def test_min_recall_applies_to_the_corpus(folder: Path) -> None:
    result = invoke("eval", str(folder), "-s", "window:k=2", "--jobs", "1",
                    "--provider", "scripted", "--min-recall", "0.9")
    assert result.exit_code == 1
    assert "recall below 0.9: window k=2" in result.stderr


def test_min_recall_on_a_corpus_compares_exactly(tmp_path: Path) -> None:
    """The corpus recall was rounded before the check, as a single file's was."""
    for name, texts in (("a.jsonl", ["李雷", "杭州"]), ("b.jsonl", ["上海"])):
        (tmp_path / name).write_text("".join(json.dumps(line, ensure_ascii=False) + "\n"
                                             for line in [
            {"role": "user", "content": "我叫李雷，住在杭州。", "id": "u1"},
            {"role": "assistant", "content": "好的。", "id": "a1"},
            {"probe": "我是谁？", "expect_ids": ["u1"], "expect_text": texts}]),
            encoding="utf-8")
    result = invoke("eval", str(tmp_path), "-s", "buffer", "--jobs", "1",
                    "--provider", "scripted", "--min-recall", "0.66667")
    assert result.exit_code == 1
    assert "recall below 0.66667: buffer (0.666667)" in result.stderr


def test_min_recall_gates_the_recall_it_names_on_a_corpus(tmp_path: Path) -> None:
    """A plain --min-recall gates the lower of id and text recall: on a set whose expected
    text is paraphrase it failed at 0.27 while id recall was 1.00, with nothing to gate id
    recall alone. The lines per transcript name each recall."""
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(line, ensure_ascii=False) + "\n"
                                              for line in [
        {"role": "user", "content": "我叫李雷，住在杭州。", "id": "u1"},
        {"role": "assistant", "content": "好的。", "id": "a1"},
        {"probe": "我是谁？", "expect_ids": ["u1"], "expect_text": ["李雷", "西湖边"]}]),
        encoding="utf-8")
    args = ("eval", str(tmp_path), "-s", "buffer", "--jobs", "1", "--provider", "scripted")
    plain = invoke(*args, "--min-recall", "0.8", code=1)
    assert plain.stderr.splitlines()[-1] == "recall below 0.8: buffer (0.50)"
    assert "a.jsonl  buffer  probes 1  id recall 1.00  text recall 0.50" in plain.stdout
    invoke(*args, "--min-recall", "id=0.8", code=0)
    both = invoke(*args, "--min-recall", "ID=0.8", "--min-recall", "text=0.6", code=1)
    assert both.stderr.splitlines()[-1] == "text recall below 0.6: buffer (0.50)"


def test_the_folder_table_names_each_tokenizer_and_says_when_counts_mix(
        tmp_path: Path) -> None:
    """The table's caption named no tokenizer, and averaged an exact count with an
    approximate one (a recorded tokenizer not on this machine) without a word."""
    for name, tokenizer in (("exact.jsonl", "cl100k_base"), ("guess.jsonl", "llama:qwen.gguf")):
        (tmp_path / name).write_text("".join(json.dumps(line, ensure_ascii=False) + "\n"
                                             for line in [
            {"chatmem": 1, "title": name, "provider": "scripted", "model": "qwen",
             "tokenizer": tokenizer},
            {"role": "user", "content": "我叫李雷，住在杭州。", "id": "u1"},
            {"role": "assistant", "content": "好的。", "id": "a1"},
            {"probe": "我住哪儿？", "expect_ids": ["u1"], "expect_text": ["杭州"]}]),
            encoding="utf-8")
    report = tmp_path / "report.html"
    result = invoke("eval", str(tmp_path), "-s", "buffer", "--jobs", "1",
                    "--report", str(report), width=200, code=0)
    said = " ".join(result.stdout.split())
    assert ("the token figures mix exact and approximate counts: exact.jsonl: tokenizer"
            " cl100k_base (exact) · guess.jsonl: tokenizer cl100k_base (approximate); the"
            " recorded tokenizer llama:qwen.gguf is not available here") in said
    lines = [line for line in result.stdout.splitlines() if "context mean" in line]
    assert lines[0].startswith("exact.jsonl") and "approximate" not in lines[0]
    assert lines[1].startswith("guess.jsonl") and "(approximate, cl100k_base)" in lines[1]
    page = report.read_text(encoding="utf-8")
    assert "guess.jsonl: tokenizer cl100k_base (approximate)" in page
    (tmp_path / "guess.jsonl").unlink()
    alone = invoke("eval", str(tmp_path), "-s", "buffer", "--jobs", "1",
                   width=200, code=0, env={"CHATMEM_TIMEZONE": "Asia/Shanghai"})
    assert [line.strip() for line in alone.stdout.splitlines()[-2:]] == [
        "tokenizer cl100k_base (exact)", "days read in time zone Asia/Shanghai"]


def test_the_folder_json_and_report_say_the_time_zone(tmp_path: Path) -> None:
    """Which day "on 5 March" names depends on the zone, and no output said which."""
    shutil.copy(SESSIONS / "support.jsonl", tmp_path / "support.jsonl")
    report = tmp_path / "r.html"
    for zone, jobs in (("Asia/Shanghai", "1"), ("UTC", "2")):
        data = json.loads(invoke("eval", str(tmp_path), "-s", "window", "--jobs", jobs,
                                 "--provider", "scripted", "--json", "--report", str(report),
                                 env={"CHATMEM_TIMEZONE": zone}, code=0).stdout)
        assert data["timezone"] == zone
        assert [t["timezone"] for t in data["transcripts"]] == [zone]
        assert f"days read in time zone <b>{zone}</b>" in report.read_text(encoding="utf-8")


def test_a_bad_file_is_one_line_and_the_others_are_still_evaluated(
        folder: Path, tmp_path: Path) -> None:
    shutil.copy(folder / "support.jsonl", tmp_path / "a.jsonl")
    (tmp_path / "b.jsonl").write_text('{"role": "user", "content": "hi"}\n{oops\n',
                                      encoding="utf-8")
    result = invoke("eval", str(tmp_path), "-s", "window", "--jobs", "2",
                    "--provider", "scripted", "--json")
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert [Path(t["source"]).name for t in data["transcripts"]] == ["a.jsonl"]
    assert [Path(e["path"]).name for e in data["errors"]] == ["b.jsonl"]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "b.jsonl" in errors[0]
    # The progress lines say which was evaluated and which failed, in the order they ended.
    progress = sorted(line.split(" (")[0] for line in result.stderr.splitlines()
                      if line.startswith(("evaluated", "failed")))
    assert [line.split()[0] + " " + line.split()[-1] for line in progress] == [
        "evaluated a.jsonl", "failed b.jsonl"]


@pytest.mark.parametrize(("args", "named"), [
    ((), "no transcript files"),
    (("-s", "nosuch"), "nosuch"),
    # Each worker refused it alone: an error per transcript, `complete: true`.
    (("-s", "window", "-s", "window", "-j", "2"), "each --strategy must differ (window given"
     " twice)"),
    (("-s", "window:k=3", "-s", "window:k=03"), "each --strategy must differ (window k=3 and"
     " window k=03 are the same strategy)"),
    (("--report", "nosuch/r.html"), "nosuch/r.html: cannot write the report: no folder nosuch"),
])
def test_folder_errors_are_one_line(tmp_path: Path, folder: Path, args: tuple[str, ...],
                                    named: str) -> None:
    target = tmp_path if not args else folder
    result = invoke("eval", str(target), *args, "--provider", "scripted")
    assert result.exit_code == 2
    assert named in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""


TRANSCRIPTS = 200


def test_ctrl_c_keeps_what_was_printed(folder: Path, tmp_path: Path) -> None:
    """A real SIGINT after the first transcript finishes: its lines stay, then the totals."""
    # Enough transcripts that the run is still going when the signal lands: with 8, a test
    # process the machine left waiting after reading the first line sent it after the
    # last one (exit 0). The run is interrupted after a file or two, so more cost nothing.
    many = tmp_path / "many"
    many.mkdir()
    for i in range(TRANSCRIPTS):
        shutil.copy(folder / "long-chat.jsonl", many / f"c{i}.jsonl")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "eval", str(many), "-s", "window", "--jobs", "2",
         "--provider", "scripted"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        text=True, preexec_fn=ctrl_c_reaches_it)
    assert process.stderr is not None
    first = process.stderr.readline()
    assert first.startswith(f"evaluated 1/{TRANSCRIPTS}"), first
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130
    done = int(stderr.strip().splitlines()[-1].split()[1])
    assert stderr.strip().splitlines()[-1].startswith("interrupted:")
    assert 1 <= done < TRANSCRIPTS
    names = [line.split()[0] for line in stdout.splitlines() if line.startswith("c")]
    assert len(names) == done
    assert f"eval of {done} transcripts" in stdout



def test_parallel_workers_never_import_from_the_current_directory(
        folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A spawned worker starts as `python -c`, the cwd first on its path: a socket.py in
    the folder eval ran from ran as the user in every worker (multiprocessing imports
    socket before it takes the parent's path). This one runs the real socket after."""
    ran = tmp_path / "ran"
    trap = tmp_path / "downloads"
    trap.mkdir()
    (trap / "socket.py").write_text(
        f"import os, sysconfig\nopen({str(ran)!r}, 'a').write(str(os.getpid()))\n"
        "real = os.path.join(sysconfig.get_paths()['stdlib'], 'socket.py')\n"
        "exec(compile(open(real).read(), real, 'exec'))\n", encoding="utf-8")
    monkeypatch.chdir(trap)
    result = evaluate(str(folder), "-s", "window", "--jobs", "2")
    assert result["files"] == 3 and result["errors"] == []
    assert not ran.exists()
    assert "PYTHONSAFEPATH" not in os.environ  # set for the pool's life only


def test_parallel_workers_get_the_largest_transcripts_first(folder: Path) -> None:
    files = transcript_files(folder)
    by_size = largest_first(files)
    assert [f.stat().st_size for f in by_size] == sorted(
        (f.stat().st_size for f in files), reverse=True)
    assert by_size != files  # else this test could not tell the orders apart


def test_probes_only_reaches_every_worker(folder: Path) -> None:
    strategies = ("-s", "window:k=2", "-s", "retrieval", "--jobs", "2")
    full = evaluate(str(folder), *strategies)
    quick = evaluate(str(folder), *strategies, "--probes-only")
    drop = {"prompt_tokens_mean"}
    assert [{k: v for k, v in row.items() if k not in drop} for row in quick["aggregate"]] == [
        {k: v for k, v in row.items() if k not in drop} for row in full["aggregate"]]
    assert [row["prompt_tokens_mean"] for row in quick["aggregate"]] == [None, None]
    assert all(s["probes_only"] for t in quick["transcripts"] for s in t["strategies"])


def test_a_document_with_a_nested_messages_key_is_evaluated_with_the_others(
        folder: Path, tmp_path: Path) -> None:
    shutil.copy(folder / "support.jsonl", tmp_path / "a.jsonl")
    (tmp_path / "b.json").write_text(json.dumps({
        "metadata": {"messages": [], "source": "export"}, "title": "旅行计划",
        "messages": [{"role": "user", "content": "预算两万元", "id": "u1"},
                     {"role": "assistant", "content": "好的"},
                     {"probe": "预算多少？", "expect_ids": ["u1"]}]},
        ensure_ascii=False, indent=1), encoding="utf-8")
    result = invoke("eval", str(tmp_path), "-s", "window", "--provider", "scripted", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert sorted(Path(t["source"]).name for t in data["transcripts"]) == ["a.jsonl", "b.json"]


def test_upper_case_extensions_are_transcripts_of_the_folder(tmp_path: Path) -> None:
    shutil.copy(SESSIONS / "travel-zh.jsonl", tmp_path / "旅行.JSONL")
    (tmp_path / "notes.txt").write_text("不是对话", encoding="utf-8")
    assert [p.name for p in transcript_files(tmp_path)] == ["旅行.JSONL"]
    data = evaluate(str(tmp_path), "-s", "window")
    assert [Path(t["source"]).name for t in data["transcripts"]] == ["旅行.JSONL"]


def test_a_strategy_the_config_makes_the_same_is_refused_before_any_transcript(
        tmp_path: Path, folder: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[strategies.window]\nk = 3\n", encoding="utf-8")
    result = invoke("eval", str(folder), "-s", "window", "-s", "window:k=3", "--config",
                    str(config), "--provider", "scripted", "--json")
    assert result.exit_code == 2
    # The config's k=3 labels both `window k=3`, as a single transcript's eval does.
    assert result.stderr == "error: each --strategy must differ (window k=3 given twice)\n"
    assert result.stdout == ""


def test_each_progress_line_says_how_long_its_own_transcript_took(tmp_path: Path) -> None:
    """The seconds were those since the eval began: a small file after a long one was said
    to take longer than the long one."""
    shutil.copy(SESSIONS / "long-chat.jsonl", tmp_path / "1-long.jsonl")
    (tmp_path / "2-short.jsonl").write_text("".join(json.dumps(line, ensure_ascii=False) + "\n"
                                                    for line in [
        {"role": "user", "content": "我叫李雷。", "id": "u1"},
        {"role": "assistant", "content": "好的。"},
        {"probe": "我叫什么？", "expect_ids": ["u1"]},
    ]), encoding="utf-8")
    result = invoke("eval", str(tmp_path), "-s", "buffer", "-s", "summary-buffer", "-j", "1",
                    "--provider", "scripted", "--json", code=0)
    seconds = {line.split(": ")[1].split(" (")[0]: float(line.split(" (")[1].split(" s)")[0])
               for line in result.stderr.splitlines() if line.startswith("evaluated")}
    assert seconds["2-short.jsonl"] < seconds["1-long.jsonl"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_on_a_terminal_the_bar_moves_within_a_transcript(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> None:
    """The bar counted finished transcripts only: a folder of a few long ones stayed at 0%
    for minutes. It moves as each worker replays its transcript."""
    import io

    from rich.console import Console
    from rich.progress import Progress

    import chatmem.cli.corpus as corpus

    shutil.copy(SESSIONS / "long-chat.jsonl", tmp_path / "long-chat.jsonl")
    shutil.copy(SESSIONS / "support.jsonl", tmp_path / "support.jsonl")
    class Screen(io.StringIO):
        def isatty(self) -> bool:  # a terminal the test can read
            return True

    screen = Screen()
    terminal = Console(file=screen, force_terminal=True, width=100)
    monkeypatch.setattr(corpus, "consoles", lambda: (Console(file=io.StringIO()), terminal))
    shown: list[float] = []
    update, advance = Progress.update, Progress.advance

    def updated(bar: Progress, task: Any, **fields: Any) -> None:
        update(bar, task, **fields)
        if bar.tasks[0].description == "evaluating transcripts":  # not "embedding texts"
            shown.append(bar.tasks[0].completed)

    def advanced(bar: Progress, task: Any, by: float = 1) -> None:
        advance(bar, task, by)
        if bar.tasks[0].description == "evaluating transcripts":
            shown.append(bar.tasks[0].completed)

    monkeypatch.setattr(Progress, "update", updated)
    monkeypatch.setattr(Progress, "advance", advanced)
    invoke("eval", str(tmp_path), "-s", "window", "-s", "retrieval", "-j", jobs,
           "--provider", "scripted", "--json", code=0)
    assert shown == sorted(shown) and shown[-1] == 2  # never back, and both in the end
    # Before either transcript finished, the bar showed parts of one: a few dozen steps.
    within = [s for s in shown if 0 < s < 1]
    assert len(within) > 10, shown


def test_forced_colour_keeps_a_pipe_s_lines_where_they_go(folder: Path) -> None:
    """FORCE_COLOR=1 (colour in a CI log) made Rich call stderr a terminal: the bar's frames
    (cursor hidden, lines erased) went into the log, the per-file lines moved from stdout to
    stderr and "evaluated 1/3" was dropped."""
    result = invoke("eval", str(folder), "-s", "window", "--jobs", "1",
                    "--provider", "scripted", env={"FORCE_COLOR": "1"}, code=0)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
    assert [line.split()[0] for line in plain.splitlines()[:3]] == [
        f"{n}.jsonl" for n in SAMPLES]
    assert "\x1b[?25l" not in result.stderr and "\r" not in result.stderr
    said = re.sub(r"\x1b\[[0-9;]*m", "", result.stderr).splitlines()
    assert [line.split(":")[0] for line in said] == [
        "evaluated 1/3", "evaluated 2/3", "evaluated 3/3"]


BOOM = '''
from chatmem.memory.buffer import BufferStrategy


class Boom(BufferStrategy):
    name = "boom"
    description = "fails to build"

    def build(self, request):
        raise RuntimeError("炸了")


def register(plugins):
    plugins.add_strategy(Boom)
'''


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_plugin_strategy_failing_in_a_worker_is_said_naming_its_plugin(
        installed: Install, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> None:
    """As `eval FILE`, `ask` and the chat say it: the line lacked "(plugin boom (chatmem-boom
    0.1.0))", so the user could not tell whose code failed."""
    installed("chatmem-boom", "chatmem_boom", BOOM)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "site"), *sys.path]))
    shutil.copy(SESSIONS / "support.jsonl", tmp_path / "support.jsonl")
    result = invoke("eval", str(tmp_path), "-s", "boom", "--jobs", jobs, "--provider",
                    "scripted", "--json")
    said = ("strategy 'boom' failed in its build: RuntimeError: 炸了 (plugin chatmem_boom"
            " (chatmem-boom 0.1.0))")
    # 1, as `eval FILE` exits on it: it exited 2, the code of a mistyped command.
    assert result.exit_code == 1 == invoke("eval", str(tmp_path / "support.jsonl"), "-s",
                                           "boom", "--provider", "scripted").exit_code
    assert f"error: {said}" in result.stderr.splitlines()
    assert [e["error"] for e in json.loads(result.stdout)["errors"]] == [said]
