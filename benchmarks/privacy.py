"""What a history file gives away: plaintext at rest, sensitive details in memory, retention.

Runs the installed `chatmem` (scripted provider, no network) and prints three tables:

1. Plaintext at rest: a chat under window, summary-buffer and entity, with and
   without CHATMEM_KEY; how many of the conversation's distinctive phrases can be
   found in the raw bytes of the file, its -wal and its -shm, while the chat is
   still running (WAL live) and after it exits.
2. Sensitive details: card numbers, IBANs, passwords, API keys, phone numbers and
   national ids said in English and Chinese, under entity (fact extractor) and
   summary-buffer (summary and drift guard); how many of them end up in facts,
   pins or summaries, and how many ordinary details (ORD-7731, 五千元, 2026-03-15)
   are still remembered.
3. Retention: which of the retention commands and settings exist.
4. The phrasing corpus (benchmarks/privacy_corpus.py): 150+ sensitive and 150+
   harmless phrasings, English and Chinese, labelled, unlabelled, repeated by the
   assistant and split over two turns, each replayed in-process under `entity`
   (fact extractor) and `summary` (summarizer and drift guard) with the scripted
   helper model. A secret is kept out when its value is in none of what the
   helper model was sent, the facts, the summaries (text and anchors) and the
   pins; a harmless value is wrongly redacted when the summarizer or the fact
   extractor was sent a marker in its place. Targets: >= 97 % kept out, <= 2 %
   wrongly redacted. The cases of benchmarks/privacy_corpus_other_names.py
   (issue 28: Wi-Fi and network keys, passcodes, combinations, door and safe
   codes named in other words, and their look-alikes) are counted on their own
   line and in the total.

    python benchmarks/privacy.py              # all four tables
    python benchmarks/privacy.py --corpus     # only the corpus figures (and misses)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import privacy_corpus
import privacy_corpus_other_names

CHAT = [
    "Hello, my name is Mirela Quastbeck and I live in Zagreb.",
    "My order is QX-48213 and it was a velvet armchair.",
    "我们五月去杭州旅行，预算是五千元，住在西湖边的琉璃客栈。",
    "The delivery address is 17 Wisteria Crescent, flat 9.",
    "Please remember the courier is called Tobiasz Wrenfield.",
    "我的订单号是ORD-55190，请帮我查一下。",
    "Also the gate code is behind the blue lantern sign.",
]
PHRASES = ["Mirela Quastbeck", "QX-48213", "velvet armchair", "琉璃客栈", "Wisteria Crescent",
           "Tobiasz Wrenfield", "ORD-55190", "blue lantern"]
RAW_KEY = "x'" + "3b" * 32 + "'"

# (label, what the user says, the sensitive value that must not be remembered)
SENSITIVE = [
    ("card (en)", "My credit card number is 4111 1111 1111 1111.", "4111 1111 1111 1111"),
    ("card (zh)", "我的银行卡号是6222021001115678905。", "6222021001115678905"),
    ("IBAN", "My IBAN is DE89 3704 0044 0532 0130 00.", "DE89 3704 0044 0532 0130 00"),
    ("password (en)", "My wifi password is Tr0ub4dor&3x.", "Tr0ub4dor&3x"),
    ("password (zh)", "我的密码是Hua8mei2024。", "Hua8mei2024"),
    ("API key", "My OpenAI key is sk-proj-Xb81mQz7LkP0vT4sW9cY2aR6.",
     "sk-proj-Xb81mQz7LkP0vT4sW9cY2aR6"),
    ("phone (en)", "My phone number is +44 20 7946 0958.", "+44 20 7946 0958"),
    ("phone (zh)", "我的手机号是13812345678。", "13812345678"),
    ("national id (zh)", "我的身份证号是11010519491231002X。", "11010519491231002X"),
]
ORDINARY = [
    ("order id", "The order number is ORD-7731.", "ORD-7731"),
    ("amount (zh)", "我的预算是五千元。", "五千元"),
    ("date", "The flight is on 2026-03-15.", "2026-03-15"),
]


def chatmem(*args: str, env: dict[str, str],
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["chatmem", *args], input=stdin, capture_output=True, text=True,
                          env=env, timeout=300)


def environment(home: Path, key: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHATMEM_", "OPENAI_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), NO_COLOR="1")
    if key:
        env["CHATMEM_KEY"] = key
    return env


def found_in(path: Path, phrases: list[str]) -> int | str:
    if not path.exists():
        return "—"
    data = path.read_bytes()
    return sum(1 for p in phrases if p.encode() in data)


def plaintext_at_rest(strategy: str, key: str | None, root: Path) -> dict[str, object]:
    home = root / f"{strategy}-{bool(key)}"
    home.mkdir()
    db = home / "h.db"
    env = environment(home, key)
    proc = subprocess.Popen(
        ["chatmem", "chat", "s", "--db", str(db), "--provider", "scripted", "-s", strategy],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdin and proc.stdout
    for line in CHAT:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        proc.stdout.readline()  # one reply line per turn
    live = {suffix: found_in(Path(f"{db}{suffix}"), PHRASES) for suffix in ("", "-wal", "-shm")}
    proc.stdin.close()
    proc.wait(timeout=60)
    after = {suffix: found_in(Path(f"{db}{suffix}"), PHRASES) for suffix in ("", "-wal", "-shm")}
    return {"strategy": strategy, "key": "yes" if key else "no", "exit": proc.returncode,
            "live": live, "after": after}


def sensitive_memory(strategy: str, root: Path) -> dict[str, object]:
    home = root / f"sensitive-{strategy.split(':')[0]}"
    home.mkdir()
    db = home / "h.db"
    env = environment(home, None)
    lines = [say for _, say, _ in SENSITIVE + ORDINARY]
    # Small talk after the details pushes them out of a small summary-buffer window.
    lines += [f"Small talk number {i}: the weather is mild and nothing much happens."
              for i in range(8)]
    result = chatmem("chat", "s", "--db", str(db), "--provider", "scripted", "-s", strategy,
                     env=env, stdin="\n".join(lines) + "\n")
    listed = chatmem("facts", "list", "--db", str(db), "--json", env=env)
    rows = json.loads(listed.stdout or "[]")
    where = {
        "facts": " ".join(f"{r['key']} {r['value']}" for r in rows if r["kind"] == "fact"),
        "pins": " ".join(r["value"] for r in rows if r["kind"] == "pinned"),
        "summaries": chatmem("inspect", "s", "--db", str(db), "--summaries", "--json",
                             env=env).stdout,
    }
    return {
        "strategy": strategy, "exit": result.returncode,
        **{place: [label for label, _, value in SENSITIVE if value in text]
           for place, text in where.items()},
        "ordinary": [label for label, _, value in ORDINARY
                     if any(value in text for text in where.values())],
    }


def retention(root: Path) -> dict[str, str]:
    env = environment(root, None)
    config = root / "config.toml"
    config.write_text("retention_days = 30\n")
    checks = {
        "sessions prune": chatmem("sessions", "prune", "--help", env=env).returncode,
        "retention_days in config": chatmem("config", "show", "--config", str(config),
                                            env=env).returncode,
        "forget-me": chatmem("forget-me", "--help", env=env).returncode,
        "sessions export --all": chatmem("sessions", "export", "--help", env=env).returncode,
        "encrypt": chatmem("encrypt", "--help", env=env).returncode,
    }
    help_text = chatmem("sessions", "export", "--help", env=env).stdout
    checks["sessions export --all"] = 0 if "--all" in help_text else 2
    return {k: "yes" if v == 0 else "no" for k, v in checks.items()}


# -- 4. the phrasing corpus ------------------------------------------------------------

CORPUS_STRATEGIES = ("entity", "summary")


@dataclass
class Seen:
    """What one replayed case gave the helper model and left in derived memory."""

    sent: list[str] = field(default_factory=list)
    """Every request to the helper model (summaries, facts), as text."""
    facts: list[str] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    pins: list[str] = field(default_factory=list)


class RecordingProvider:
    """The scripted model, keeping the text of every helper request it is sent."""

    def __init__(self, inner: object, seen: Seen) -> None:
        self.inner, self.seen = inner, seen
        self.name, self.model = inner.name, inner.model  # type: ignore[attr-defined]

    def complete(self, messages: list[dict[str, str]], *, purpose: str = "chat") -> str:
        self.seen.sent.append("\n".join(m["content"] for m in messages))
        return self.inner.complete(messages, purpose=purpose)  # type: ignore[attr-defined,no-any-return]

    def stream(self, messages: list[dict[str, str]]) -> object:
        return self.inner.stream(messages)  # type: ignore[attr-defined]

    def token_counter(self) -> object:
        return self.inner.token_counter()  # type: ignore[attr-defined]

    def close(self) -> None:
        pass


def replay_case(messages: Sequence[str]) -> Seen:
    """Replay one case's turns under each corpus strategy; what reached memory."""
    from chatmem.engine import Engine
    from chatmem.memory.pins import pinned_facts
    from chatmem.plugins import load_registries
    from chatmem.providers.scripted import ScriptedProvider
    from chatmem.store import Store

    said = list(messages) + ([] if len(messages) % 2 == 0 else ["OK."])
    seen = Seen()
    for name in CORPUS_STRATEGIES:
        provider = ScriptedProvider()
        helper = RecordingProvider(provider, seen)
        with Store(":memory:") as store:
            strategy = load_registries().strategies.strategy(name)
            session = store.sessions.create_session("case", strategy.name, dict(strategy.params),
                                                    provider="scripted", model="scripted")
            engine = Engine(store, session, provider, strategy,
                            helper=helper)  # type: ignore[arg-type]
            for user, reply in zip(said[::2], said[1::2], strict=True):
                engine.replay_turn(user, reply)
            seen.facts += [f"{f.key} {f.value}" for f in store.facts.facts(session_id=session.id)]
            for record in store.memory.summaries(session.id):
                seen.summaries += [record.text, *record.anchors, *record.dropped_anchors]
            seen.pins += [f"{p.text} {p.quote}" for p in pinned_facts(store.memory, session.id)]
    return seen


@dataclass
class CorpusFigures:
    sensitive: int
    kept_out: int
    harmless: int
    wrongly_redacted: int
    leaks: list[tuple[str, str, str, str]]
    """(style, language, value, where) of each secret that got through."""
    redacted: list[tuple[str, str, str]]
    """(style, language, value) of each harmless value masked."""

    @property
    def kept_out_share(self) -> float:
        return self.kept_out / self.sensitive if self.sensitive else 1.0

    @property
    def redacted_share(self) -> float:
        return self.wrongly_redacted / self.harmless if self.harmless else 0.0


def leaked_into(value: str, seen: Seen) -> str | None:
    """Where a secret got through: the first of sent, facts, summaries, pins holding it."""
    for place in ("sent", "facts", "summaries", "pins"):
        if any(value in text for text in getattr(seen, place)):
            return place
    return None


def masked(value: str, messages: Sequence[str], seen: Seen) -> bool:
    """Whether a harmless value said in `messages` reached the helper model masked.

    Every message goes to the summarizer, and each user message to the fact
    extractor: a value missing from either request was replaced by a marker.
    """
    summary_requests = [t for t in seen.sent if "New lines:" in t]
    fact_requests = [t for t in seen.sent if "New lines:" not in t]
    said_by_user = any(value in m for m in messages[::2])
    return (not any(value in t for t in summary_requests)
            or (said_by_user and not any(value in t for t in fact_requests)))


CORPORA: dict[str, tuple[list[privacy_corpus.Case], list[privacy_corpus.Case]]] = {
    "first corpus": (privacy_corpus.SENSITIVE, privacy_corpus.HARMLESS),
    "other names (issue 28)": (privacy_corpus_other_names.SENSITIVE,
                               privacy_corpus_other_names.HARMLESS),
}


def corpus_figures(every: int = 1, corpora: Sequence[str] = tuple(CORPORA)) -> CorpusFigures:
    """Run the corpora named (every `every`-th case of each list, for a quick sample)."""
    sensitive = [case for name in corpora for case in CORPORA[name][0][::every]]
    harmless = [case for name in corpora for case in CORPORA[name][1][::every]]
    leaks = []
    for style, lang, value, messages in sensitive:
        where = leaked_into(value, replay_case(messages))
        if where:
            leaks.append((style, lang, value, where))
    redacted = [(style, lang, value) for style, lang, value, messages in harmless
                if masked(value, messages, replay_case(messages))]
    return CorpusFigures(len(sensitive), len(sensitive) - len(leaks), len(harmless),
                         len(redacted), leaks, redacted)


def print_corpus(figures: dict[str, CorpusFigures]) -> None:
    """One line per corpus and their total; then each secret kept and each value masked."""
    print(f"4. Phrasing corpus ({', '.join(CORPUS_STRATEGIES)}; scripted helper model):"
          " secrets kept out of what the helper model sees, facts, summaries and pins"
          " (target >= 97%); harmless values wrongly redacted (target <= 2%)")
    print(f"{'corpus':<26}{'kept out':<22}wrongly redacted")
    for name, f in figures.items():
        print(f"{name:<26}{f'{f.kept_out}/{f.sensitive} = {f.kept_out_share:.1%}':<22}"
              f"{f.wrongly_redacted}/{f.harmless} = {f.redacted_share:.1%}")
    total = CorpusFigures(*(sum(getattr(f, n) for f in figures.values()) for n in (
        "sensitive", "kept_out", "harmless", "wrongly_redacted")), [], [])
    print(f"{'all':<26}{f'{total.kept_out}/{total.sensitive} = {total.kept_out_share:.1%}':<22}"
          f"{total.wrongly_redacted}/{total.harmless} = {total.redacted_share:.1%}")
    for name, f in figures.items():
        for style, lang, value, where in f.leaks:
            print(f"  kept   {style:<11}{lang:<4}{value!r} (in {where}; {name})")
        for style, lang, value in f.redacted:
            print(f"  masked {style:<11}{lang:<4}{value!r} ({name})")


def every_corpus() -> dict[str, CorpusFigures]:
    return {name: corpus_figures(corpora=[name]) for name in CORPORA}


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="store_true",
                        help="only the phrasing corpus's figures (and misses): table 4")
    if parser.parse_args(argv).corpus:
        print_corpus(every_corpus())
        return 0
    with tempfile.TemporaryDirectory(prefix="chatmem-privacy-") as tmp:
        root = Path(tmp)
        print(f"1. Plaintext at rest: phrases found of {len(PHRASES)} "
              "(file / -wal / -shm; while the chat runs → after it exits)")
        print(f"{'strategy':<16}{'key':<5}{'exit':<6}{'live':<22}after")
        for key in (None, RAW_KEY):
            for strategy in ("window", "summary-buffer:max_tokens=120", "entity"):
                row = plaintext_at_rest(strategy, key, root)
                live = " / ".join(str(v) for v in row["live"].values())  # type: ignore[attr-defined]
                after = " / ".join(str(v) for v in row["after"].values())  # type: ignore[attr-defined]
                print(f"{strategy.split(':')[0]:<16}{row['key']:<5}{row['exit']!s:<6}"
                      f"{live:<22}{after}")
        print()
        print(f"2. Sensitive details remembered (facts, pins, summaries) of {len(SENSITIVE)};"
              f" ordinary details remembered of {len(ORDINARY)}")
        print(f"{'strategy':<16}{'facts':<7}{'pins':<7}{'summaries':<11}ordinary   sensitive kept")
        for strategy in ("entity", "summary-buffer:max_tokens=400"):
            row = sensitive_memory(strategy, root)
            kept = sorted({label for place in ("facts", "pins", "summaries")
                           for label in row[place]})  # type: ignore[attr-defined]
            counts = [f"{len(row[place])}/{len(SENSITIVE)}"  # type: ignore[arg-type]
                      for place in ("facts", "pins", "summaries")]
            print(f"{strategy.split(':')[0]:<16}{counts[0]:<7}{counts[1]:<7}{counts[2]:<11}"
                  f"{len(row['ordinary'])}/{len(ORDINARY):<8} {', '.join(kept) or '—'}")  # type: ignore[arg-type]
        print()
        print("3. Retention and erasure")
        for name, present in retention(root).items():
            print(f"{name:<28}{present}")
    print()
    print_corpus(every_corpus())
    return 0


if __name__ == "__main__":
    sys.exit(main())
