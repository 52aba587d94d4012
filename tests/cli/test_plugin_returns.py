"""A plugin whose code returns what its contract does not allow, without raising: treated
as if it had raised (one line naming it and its plugin, the same outcome), never a
traceback, never sent to the model, never stored; but an update that ran to its end and
only answered wrongly keeps what it stored, and the line says so.

Companion of test_plugin_failures.py (plugins that raise). Each test installs a real
plugin (a module and its .dist-info on sys.path, as pip leaves one).
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import invoke
from plugin_site import Install, readme_section

from chatmem.store import Store

RETURNS = '''
import numpy as np

from chatmem.memory.assembly import assemble
from chatmem.memory.base import BaseStrategy
from chatmem.memory.context import Context, Message, Part
from chatmem.memory.reasons import TextReason
from chatmem.memory.window import WindowStrategy
from chatmem.providers.base import Purpose, Usage
from chatmem.providers.scripted import ScriptedProvider


class NoNotices(WindowStrategy):
    name = "no-notices"
    description = "update returns None"

    def update(self, env):
        return None


class SaidText(WindowStrategy):
    name = "said-text"
    description = "update returns strings"

    def update(self, env):
        return ["注意 something happened"]


class KeptNoNotices(BaseStrategy):
    name = "kept-no-notices"
    description = "update stores its state and returns None"
    keeps_state = True

    def build(self, request):
        note = request.state.get(self.name).get("note", "nothing yet")
        said = Message.counted("system", "记住 " + note, request.counter)
        return assemble(request, [Part("summary", (said,), TextReason("摘要"))])

    def update(self, env):
        env.state.set(self.name, note=f"turns 1-{env.history.turn_count()}")


class Nothing(BaseStrategy):
    name = "nothing"
    description = "build returns None"

    def build(self, request):
        return None


def summary_of(message):
    class Summarized(BaseStrategy):
        name = "bad-" + message[0]
        description = "a summary part holding " + message[0]

        def build(self, request):
            made = Message(*message[1:])
            return assemble(request, [Part("summary", (made,), TextReason("摘要"))])
    return Summarized


class OddReason(BaseStrategy):
    name = "odd-reason"
    description = "a reason whose text holds a lone surrogate"

    def build(self, request):
        said = Message.counted("system", "摘要 summary", request.counter)
        return assemble(request, [Part("summary", (said,), TextReason("why \\udcff 为什么"))])


class NoInput(BaseStrategy):
    name = "no-input"
    description = "sends no messages at all"

    def build(self, request):
        return Context((), request.budget)


class Quiet(BaseStrategy):
    name = "quiet"
    description = "assembles its context without saying its budget"

    def build(self, request):
        return assemble(request, [])


KEPT = {}


class Stale(BaseStrategy):
    name = "stale"
    description = "returns its first context every time"

    def build(self, request):
        return KEPT.setdefault("context", assemble(request, []))


class AlteredInput(BaseStrategy):
    name = "altered"
    description = "sends another input than the user's"

    def build(self, request):
        other = Message.counted("user", "改过 ALTERED", request.counter)
        context = assemble(request, [])
        parts = tuple(Part("input", (other,), p.reason) if p.kind == "input" else p
                      for p in context.parts)
        return Context(parts, context.budget, priming=context.priming)


class TwoHistories(WindowStrategy):
    name = "two-histories"
    description = "two history parts"

    def build(self, request):
        context = super().build(request)
        history = context.part("history")
        if history is None:
            return context
        parts = tuple(q for p in context.parts for q in ((p, p) if p is history else (p,)))
        return Context(parts, context.budget, priming=context.priming)


class Repeated(WindowStrategy):
    name = "repeated"
    description = "its history part sends each stored message twice"

    def build(self, request):
        context = super().build(request)
        history = context.part("history")
        if history is None:
            return context
        twice = Part("history", history.messages * 2, history.reason)
        parts = tuple(twice if p is history else p for p in context.parts)
        return Context(parts, context.budget, priming=context.priming)


class MadeUpHistory(BaseStrategy):
    name = "made-up-history"
    description = "a history part holding text of its own, as if the user had said it"

    def build(self, request):
        said = Message.counted("user", "我没说过 I never said this", request.counter)
        return assemble(request, [Part("history", (said,), TextReason("历史"))])


class NegativeBudget(BaseStrategy):
    name = "negative-budget"
    description = "its budget() answers -10"

    def budget(self, request):
        return -10

    def build(self, request):
        return assemble(request, [], budget=self.budget(request))


class QuietNegative(NegativeBudget):
    name = "quiet-negative"
    description = "its budget() answers -10, its build leaves the budget out"

    def build(self, request):
        return assemble(request, [])


class TextBudget(NegativeBudget):
    name = "text-budget"
    description = "its budget() answers text"

    def budget(self, request):
        return "200"


class Pieces:
    def __init__(self, pieces):
        self.pieces, self.usage, self.rendered_prompt = pieces, Usage(), None

    def __iter__(self):
        return iter(self.pieces)

    def close(self):
        pass


class Odd(ScriptedProvider):
    def __init__(self, name):
        super().__init__()
        self.name = name

    def stream(self, messages):
        if self.name == "numbers":
            return Pieces(["一 ", 2, 3])
        if self.name == "bare":
            return (piece for piece in ["裸 bare ", "reply"])
        if self.name == "silent":
            return (piece for piece in ["", ""])
        return super().stream(messages)

    def complete(self, messages, *, purpose=Purpose.CHAT):
        return 42


def rows(texts, width=8):
    made = np.zeros((len(texts), width), dtype=np.float32)
    for row, text in enumerate(texts):
        for char in text:
            made[row, ord(char) % width] += 1
    return made / np.maximum(np.linalg.norm(made, axis=1, keepdims=True), 1e-9)


class Embedder:
    dimensions = 8

    def __init__(self, name):
        self.key, self.name, self.calls = f"odd:{name}", name, 0

    def embed(self, texts, *, query=False):
        self.calls += 1
        texts = list(texts)
        if self.name == "short":
            return rows(texts[:-1]) if len(texts) > 1 else rows(texts)
        if self.name == "widening":
            return rows(texts, 8 if self.calls == 1 else 16)
        if self.name == "nan":
            return np.full((len(texts), 8), np.nan, dtype=np.float32)
        if self.name == "gen":
            return (row for row in rows(texts))
        return rows(texts)


def register(plugins):
    for strategy in (NoNotices, SaidText, KeptNoNotices, Nothing, NoInput, Stale,
                     AlteredInput, TwoHistories, Repeated, MadeUpHistory, NegativeBudget,
                     QuietNegative, TextBudget, Quiet, OddReason):
        plugins.add_strategy(strategy)
    for message in (("number", "system", 12345, 3), ("robot", "robot", "机器人 hi", 3),
                    ("negative", "system", "摘要 summary", -500),
                    ("surrogate", "system", "摘要 \\ud800 broken", 3)):
        plugins.add_strategy(summary_of(message))
    for name in ("numbers", "bare", "fortytwo", "silent"):
        plugins.add_provider(name, (lambda name: lambda settings: Odd(name))(name))
    for name in ("short", "widening", "nan", "gen", "fine"):
        plugins.add_embedder(name, (lambda name: lambda settings: Embedder(name))(name))
'''

BY = "(plugin returns (chatmem-returns 0.1.0))"


def install(installed: Install) -> None:
    installed("chatmem-returns", "chatmem_returns", RETURNS, name="returns")


def turns_stored(db: str, session: str) -> int:
    with Store(db) as store:
        found = store.sessions.find_session(session)
        return 0 if found is None else store.history.turn_count(found.id)


def embedder_config(tmp_path: Path, name: str) -> str:
    config = tmp_path / f"{name}.toml"
    config.write_text(f'[embeddings]\nprovider = "{name}"\n', encoding="utf-8")
    return str(config)


def test_an_update_that_returns_no_notices_keeps_every_turn_and_says_so_in_one_line(
        installed: Install, tmp_path: Path) -> None:
    """Finding 1: it was a traceback after the first turn was stored, the rest of the chat
    lost; a server reported failure for a stored turn."""
    install(installed)
    db = str(tmp_path / "h.db")
    for strategy, wrong in (("no-notices", "None, not a list of chatmem.notices Notice values"),
                            ("said-text", "a list holding str, not a chatmem.notices Notice")):
        chatted = invoke("chat", strategy, "-s", strategy, "--provider", "scripted", "--db", db,
                         input="你好 hello\n第二 second\n第三 third\n", code=0)
        assert "Traceback" not in chatted.output
        assert chatted.stdout.splitlines()[-1] == "echo #3: 第三 third"
        said = [line for line in chatted.stderr.splitlines() if "memory update" in line]
        assert said == [f"memory updated (what it stored is kept), its answer ignored: "
                        f"strategy {strategy!r}: its update returned {wrong} {BY}"] * 3
        assert turns_stored(db, strategy) == 3
    replayed = invoke("replay", "no-notices", "-s", "said-text", "--db", db, code=0)
    assert "Traceback" not in replayed.output
    assert f"its update returned a list holding str, not a chatmem.notices Notice {BY}" in " ".join(
        replayed.stderr.split())


def test_an_update_that_stores_its_state_and_returns_none_is_not_said_to_have_failed(
        installed: Install, tmp_path: Path) -> None:
    """An update that called `env.state.set(...)` and returned None (no `return []`) was
    reported as "memory update failed, will retry next turn", yet what it set was kept and
    sent: the line says it is kept and only the answer was ignored."""
    install(installed)
    db = str(tmp_path / "h.db")
    chatted = invoke("chat", "k", "-s", "kept-no-notices", "--provider", "scripted", "--db",
                     db, input="你好 hello\n第二 second\n", code=0)
    said = [line for line in chatted.stderr.splitlines() if "memory update" in line]
    assert said == ["memory updated (what it stored is kept), its answer ignored: strategy"
                    " 'kept-no-notices': its update returned None, not a list of"
                    f" chatmem.notices Notice values {BY}"] * 2
    shown = json.loads(invoke("inspect", "k", "--json", "--db", db, code=0).stdout)
    assert [m["content"] for p in shown["context"]["parts"] if p["kind"] == "summary"
            for m in p["messages"]] == ["记住 turns 1-1"]


def test_a_build_that_returns_no_context_or_text_that_is_not_text_is_one_line(
        installed: Install, tmp_path: Path) -> None:
    """Finding 2: a traceback in chat, replay and inspect (AttributeError, TypeError)."""
    install(installed)
    db = str(tmp_path / "h.db")
    invoke("chat", "c", "-s", "window", "--provider", "scripted", "--db", db,
           input="我的订单号是 ORD-7731\n", code=0)
    wrong = {"nothing": "None, not a Context",
             "bad-number": "a 'summary' part holding a message whose content is int, not text"}
    for strategy, returned in wrong.items():
        line = f"error: strategy {strategy!r} failed: its build returned {returned} {BY}"
        chatted = invoke("chat", "c", "-s", strategy, "--provider", "scripted", "--db", db,
                         input="订单号? order?\n/strategy window\n还在吗? still there?\n")
        assert "Traceback" not in chatted.output
        assert [s for s in chatted.stderr.splitlines() if s.startswith("error:")] == [line]
        assert chatted.stdout.splitlines()[-1].endswith(": 还在吗? still there?")
        for command in (("inspect", "c", "--next", "订单号?", "-s", strategy),
                        ("replay", "c", "-s", strategy), ("ask", "你好", "-s", strategy)):
            done = invoke(*command, "--provider", "scripted", "--db", db)
            assert done.exit_code != 0 and "Traceback" not in done.output, command
            assert done.stderr.splitlines() == [line], command
    assert turns_stored(db, "c") == 3  # nothing the failed builds were for was stored


def test_a_context_a_model_must_not_get_is_refused_before_it_is_sent(
        installed: Install, tmp_path: Path) -> None:
    """Finding 10: a role no model takes, negative tokens, no input or another input, a
    kind twice: sent to the model and stored as they were."""
    install(installed)
    db = str(tmp_path / "h.db")
    wrong = {
        "bad-robot": "a 'summary' part holding a message of role 'robot' (roles: assistant, "
                     "system, user)",
        "bad-negative": "a 'summary' part holding a message of -500 tokens, not a count of 0 "
                        "or more",
        "bad-surrogate": "a 'summary' part holding a message whose text is not UTF-8 (it "
                         "holds a lone surrogate)",
        "no-input": "a Context without the input as its last part (assemble() adds it)",
        "stale": "an input part that is not this request's input",
        "altered": "an input part that is not this request's input",
        "two-histories": "a 'history' part out of place (at most one part of a kind, in the "
                         "order system, summary, facts, recalled, history, files, input)",
        "repeated": "a 'history' part holding a stored message of turn 1 a second time: "
                    "each is sent once",
        "made-up-history": "a 'history' part holding a message that is not a stored one (id "
                           "None): text of its own goes in a 'summary' or 'facts' part",
    }
    for strategy, returned in wrong.items():
        chatted = invoke("chat", strategy, "-s", strategy, "--provider", "scripted",
                         "--db", db, input="我叫李雷 my name is Ada\n我叫什么? my name?\n")
        assert "Traceback" not in chatted.output
        errors = [s for s in chatted.stderr.splitlines() if s.startswith("error:")]
        assert errors[-1] == (f"error: strategy {strategy!r} failed: its build returned "
                              f"{returned} {BY}"), strategy
        # The first turn of `stale` and `two-histories` is a right context: sent and stored.
        assert turns_stored(db, strategy) == (1 if strategy in ("stale", "two-histories",
                                                                "repeated")
                                              else 0), strategy
    # A budget() of -10 was refused as the user's input "over the context budget of -10",
    # advised to raise the config's context_budget; one of "200" was a TypeError naming no
    # budget.
    for strategy, said in (
            ("quiet-negative", "its budget() returned -10, not a token count of 0 or more or "
                               "None"),
            ("negative-budget", "its build gave assemble() a budget of -10, not a token count"
                                " of 0 or more or None (what its budget() returns)"),
            ("text-budget", "its build gave assemble() a budget of '200', not a token count"
                            " of 0 or more or None (what its budget() returns)")):
        asked = invoke("ask", "你好", "-s", strategy, "--provider", "scripted", "--db", db)
        assert asked.exit_code != 0 and "Traceback" not in asked.output
        assert asked.stderr.splitlines() == [
            f"error: strategy {strategy!r} failed: {said} {BY}"], strategy
    shown = json.loads(invoke("inspect", "stale", "--json", "--db", db, code=0).stdout)
    assert shown["context"]["parts"][-1]["messages"][0]["content"] == "我叫李雷 my name is Ada"


def test_a_reason_holding_a_lone_surrogate_is_stored_with_a_replacement(
        installed: Install, tmp_path: Path) -> None:
    """A reason's text is the strategy's to word: a lone surrogate in it made the turn's row
    unstorable after the model had answered (the chat ended, the reply lost)."""
    install(installed)
    db = str(tmp_path / "h.db")
    chatted = invoke("chat", "r", "-s", "odd-reason", "--provider", "scripted", "--db", db,
                     input="你好\n再见\n", code=0)
    assert chatted.stdout.splitlines()[-1] == "echo #2: 再见"
    shown = json.loads(invoke("inspect", "r", "--json", "--db", db, code=0).stdout)
    assert "why \ufffd 为什么" in json.dumps(shown["context"], ensure_ascii=False)


def test_a_reply_piece_that_is_not_text_is_a_failed_turn_and_a_reply_without_usage_is_fine(
        installed: Install, tmp_path: Path) -> None:
    """Finding 3: a traceback, no failed turn recorded (p-int: after "一 " was shown); a
    stream without `usage` crashed once it ended."""
    install(installed)
    db = str(tmp_path / "h.db")
    chatted = invoke("chat", "n", "--provider", "numbers", "--db", db,
                     input="你好 hello\n再来 again\n")
    assert chatted.exit_code == 1 and "Traceback" not in chatted.output
    line = f"error: provider 'numbers' failed: a piece of its reply is int, not text {BY}"
    assert [s for s in chatted.stderr.splitlines() if s.startswith("error:")] == [line] * 2
    for request in ("1", "2"):  # both attempts at turn 1: reached as requests
        shown = json.loads(invoke("inspect", "n", "--request", request, "--json", "--db", db,
                                  code=0).stdout)
        assert shown["turn"]["status"] == "failed"
        assert "a piece of its reply is int" in shown["turn"]["error"]
    asked = invoke("ask", "你好?", "--provider", "numbers", "--db", db, code=1)
    assert asked.stderr == line + "\n"
    bare = invoke("ask", "你好?", "--provider", "bare", "--db", db, code=0)
    assert bare.stdout.startswith("裸 bare reply")
    # A reply of nothing is a fault, as chatmem's own providers say of an empty reply: it
    # was stored as an answer.
    silent = invoke("ask", "空", "你好?", "--provider", "silent", "--db", db, code=1)
    assert silent.stderr == f"error: provider 'silent' failed: its reply was empty {BY}\n"
    shown = json.loads(invoke("inspect", "空", "--json", "--db", db, code=0).stdout)
    assert shown["turn"]["status"] == "failed"


def test_an_embedder_that_returns_too_few_or_changing_rows_is_one_line_naming_it(
        installed: Install, tmp_path: Path) -> None:
    """Finding 4: a traceback in eval, replay and index (zip() shorter, shapes that do not
    broadcast)."""
    install(installed)
    db = str(tmp_path / "h.db")
    short = embedder_config(tmp_path, "short")
    chatted = invoke("chat", "e", "-s", "retrieval", "--provider", "scripted", "--db", db,
                     "--config", short, input="我住在北京 I live in Beijing\n订单 order\n",
                     code=0)
    assert "Traceback" not in chatted.output
    indexed = invoke("index", "e", "--db", db, "--config", short, code=1)
    assert "Traceback" not in indexed.output
    assert indexed.stderr.splitlines()[-1] == (
        "error: embedder 'short' failed: its embed returned an array of shape (3, 8) for 4 "
        f"texts; it should be (4, 8): one row per text, as wide as its dimensions {BY}")
    for name in ("short", "widening"):  # as for an embedder that raises: each turn says so
        replayed = invoke("replay", "e", "-s", "retrieval:mode=dense", "--db", db,
                          "--config", embedder_config(tmp_path, name), code=0)
        assert "Traceback" not in replayed.output
        said = " ".join(replayed.stderr.split())
        # Not "will retry next turn": no chat turn follows a replay's (brief day71).
        assert f"indexing failed during the replay: embedder {name!r} failed: its embed " \
               "returned an array of shape" in said, name
        assert "next turn" not in said


def test_an_embedder_that_returns_nan_is_refused_and_recall_still_finds_the_words(
        installed: Install, tmp_path: Path) -> None:
    """Finding 5: NaN vectors were stored, and hybrid recall then recalled nothing, not even
    the message holding the very words asked about."""
    install(installed)
    db = str(tmp_path / "h.db")
    nan = embedder_config(tmp_path, "nan")
    invoke("chat", "n", "-s", "retrieval", "--provider", "scripted", "--db", db, "--config", nan,
           input="我的订单号是 ORD-7731\n我住在北京\n别的事 anything else\n", code=0)
    indexed = invoke("index", "n", "--db", db, "--config", nan, code=1)
    assert indexed.stderr.splitlines()[-1] == (
        f"error: embedder 'nan' failed: its embed returned a vector holding NaN or infinity "
        f"{BY}")
    shown = json.loads(invoke("inspect", "n", "--next", "ORD-7731 订单号", "-s",
                              "retrieval:recent=1", "--json", "--db", db, "--config", nan,
                              code=0).stdout)
    recalled = [m["content"] for p in shown["context"]["parts"] if p["kind"] == "recalled"
                for m in p["messages"]]
    assert "我的订单号是 ORD-7731" in recalled


def test_a_wrong_value_from_a_plugins_embedder_or_helper_is_blamed_on_it_not_on_chatmem(
        installed: Install, tmp_path: Path) -> None:
    """Finding 6: "strategy 'retrieval' failed: TypeError: 'generator' object is not
    subscriptable", "strategy 'entity' could not update its memory: AttributeError: 'int'
    object has no attribute ...": chatmem's strategies were blamed."""
    install(installed)
    db = str(tmp_path / "h.db")
    chatted = invoke("chat", "g", "-s", "retrieval:mode=dense", "--provider", "scripted",
                     "--db", db, "--config", embedder_config(tmp_path, "gen"),
                     input="一 one\n二 two\n三 three\n", code=0)
    assert "strategy 'retrieval'" not in chatted.stderr and "Traceback" not in chatted.output
    # Whether the chat's own background indexing met it before the chat ended is timing;
    # `index` embeds in the foreground, every time.
    indexed = invoke("index", "g", "--db", db, "--config", embedder_config(tmp_path, "gen"))
    assert "embedder 'gen' failed: its embed returned generator, not an array of numbers" \
        in chatted.stderr + indexed.stderr
    assert "strategy 'retrieval'" not in indexed.stderr and "Traceback" not in indexed.output
    for strategy in ("summary", "entity"):
        helped = invoke("chat", f"h-{strategy}", "-s", strategy, "--provider", "scripted",
                        "--db", db, input="我叫李雷 my name is Ada\n二 two\n", code=0,
                        env={"CHATMEM_HELPER_PROVIDER": "fortytwo"})
        assert f"strategy {strategy!r}" not in helped.stderr, helped.stderr
        assert "provider 'fortytwo' failed: its reply is int, not text" in helped.stderr


def test_a_context_that_leaves_its_budget_out_is_still_held_to_it(
        installed: Install, tmp_path: Path) -> None:
    """Plugins finding 8: an input over the context budget was sent, and eval counted no
    context over it, when the strategy's assemble() was not told the budget."""
    install(installed)
    config = tmp_path / "small.toml"
    config.write_text("context_budget = 40\n", encoding="utf-8")
    db = str(tmp_path / "h.db")
    long = "这是一个很长的问题 this is a very long question " * 8
    refused = invoke("ask", "q", long, "-s", "quiet", "--provider", "scripted", "--db", db,
                     "--config", str(config), code=2)
    assert "over the context budget of 40" in refused.stderr
    assert refused.stdout == "" and turns_stored(db, "q") == 0
    fits = invoke("ask", "q", "你好", "-s", "quiet", "--provider", "scripted", "--db", db,
                  "--config", str(config), code=0)
    assert "tokens of 40" in fits.stderr


DICTS = '''
from chatmem.memory.assembly import assemble
from chatmem.memory.base import BaseStrategy
from chatmem.memory.context import Part
from chatmem.memory.reasons import TextReason


class Dicts(BaseStrategy):
    name = "dicts"
    description = "gives assemble() messages as a chat API takes them"

    def build(self, request):
        said = ({"role": "user", "content": "记住 x"},)
        return assemble(request, [Part("summary", said, TextReason("摘要"))],
                        budget=self.budget(request))


def register(plugins):
    plugins.add_strategy(Dicts)
'''


def test_a_build_giving_assemble_dicts_is_one_line_saying_what_a_part_holds(
        installed: Install, tmp_path: Path) -> None:
    """A plugin author's report: "AttributeError: 'dict' object has no attribute 'tokens'"
    (from deep in assemble's token sums), not what a part must hold or where it is said."""
    installed("chatmem-dicts", "chatmem_dicts", DICTS, name="dicts")
    db = str(tmp_path / "h.db")
    for strategy in ("dicts", "dicts+window"):
        asked = invoke("ask", "hi 你好", "--session", "d", "-s", strategy, "--provider",
                       "scripted", "--db", db)
        assert asked.exit_code == 1 and "Traceback" not in asked.output, strategy
        assert asked.stderr.splitlines() == [
            "error: strategy 'dicts' failed: its build gave assemble() a 'summary' part"
            " holding dict, not a chatmem.memory.context.Message: each part is Part(kind,"
            " messages, reason) whose messages are chatmem Message values (stored ones as"
            " given, your own text as Message.counted(role, text, request.counter)), not"
            ' dicts: README, "Writing a plugin", What a strategy is (plugin dicts'
            " (chatmem-dicts 0.1.0))"], strategy
    assert turns_stored(db, "d") == 0
    assert "Message.counted(role, text, request.counter)" in readme_section()
