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

    python benchmarks/privacy.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

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


def main() -> int:
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
