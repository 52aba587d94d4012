"""Per-turn cost of building the context, chatmem vs LangChain classic memory.

What it measures, on a real SQLite file holding N stored turns (default 100
and 1,000), median of --repeat runs:

  chatmem   window k=5, tokens max_tokens=2000: one turn through the Engine
            with the scripted provider (build context → stream → commit →
            update), and `build_context` alone.
  LangChain ConversationBufferWindowMemory(k=5) and
            ConversationTokenBufferMemory(max_token_limit=2000) over
            SQLChatMessageHistory: load_memory_variables + save_context, the
            work a chain does per turn. Token counts use the same cl100k
            encoding as chatmem, so both sides count alike.

Run (from the repository root):

    pip install -e . && pip install -r benchmarks/requirements.txt
    python benchmarks/turn_cost.py                 # 100 and 1,000 turns
    python benchmarks/turn_cost.py --turns 100 --repeat 5

Note: ConversationTokenBufferMemory prunes a copy of the SQL history's list,
so it reloads and recounts everything each turn and its context is never
actually bounded (the "context" column shows what it would send).

LangChain rows are skipped, with a note, when it is not installed. Not part of
the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

USER = [
    "My order number is ORD-{n} and I want to change the delivery address to 12 Oak Street.",
    "我们五月去杭州旅行，预算五千元，请帮我安排第{n}天的行程。",
    "Can you summarize what we decided about item {n}? Keep the dates and amounts exact.",
]
ASSISTANT = [
    "Noted: order ORD-{n}. I will update the delivery address to 12 Oak Street and confirm "
    "by email once the warehouse accepts the change.",
    "好的，第{n}天：上午游西湖，中午在楼外楼吃饭，下午去灵隐寺，晚上看《印象西湖》，预算约八百元。",
    "For item {n} we agreed on delivery on March 15, a budget of 5,000 yuan and a refund "
    "if it arrives late.",
]


def conversation(turns: int) -> list[dict[str, str]]:
    messages = []
    for n in range(1, turns + 1):
        messages.append({"role": "user", "content": USER[n % 3].format(n=n)})
        messages.append({"role": "assistant", "content": ASSISTANT[n % 3].format(n=n)})
    return messages


def median_ms(action: Callable[[int], Any], repeat: int) -> float:
    times = []
    for i in range(repeat):
        started = time.perf_counter()
        action(i)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


# -- chatmem ------------------------------------------------------------------------


Row = tuple[str, float, float, int]
"""label, turn ms, build ms, tokens of the context it builds (cl100k, with chat overhead)"""


def chatmem_rows(turns: int, repeat: int, folder: Path) -> list[Row]:
    from chatmem.config import Settings
    from chatmem.engine import open_session, strategy_label
    from chatmem.providers.scripted import ScriptedProvider
    from chatmem.store import Store

    rows = []
    for strategy, params in (("window", {"k": "5"}), ("tokens", {"max_tokens": "2000"})):
        path = folder / f"chatmem-{strategy}-{turns}.db"
        with Store(path) as store:
            engine = open_session(store, Settings(), ScriptedProvider(), "bench",
                                  strategy=strategy, params=params)
            store.import_messages(engine.session.id, conversation(turns))
            engine.build_context("warm up")  # counts the tail once, as a live chat would have
            build = median_ms(lambda i, e=engine: e.build_context(f"question {i}"), repeat)
            tokens = engine.build_context("question").tokens
            turn = median_ms(lambda i, e=engine: e.run_turn(f"next question {i}"), repeat)
        label = f"chatmem {strategy_label(strategy, params)}"
        rows.append((label, turn, build, tokens))
    return rows


# -- LangChain ------------------------------------------------------------------------


def langchain_rows(turns: int, repeat: int, folder: Path) -> list[Row]:
    try:
        from langchain_classic.memory import (
            ConversationBufferWindowMemory,
            ConversationTokenBufferMemory,
        )
    except ImportError:
        from langchain.memory import (  # type: ignore[no-redef]
            ConversationBufferWindowMemory,
            ConversationTokenBufferMemory,
        )
    from langchain_community.chat_message_histories import SQLChatMessageHistory
    from langchain_community.llms.fake import FakeListLLM
    from langchain_core.messages import AIMessage, HumanMessage

    from chatmem.tokens import counter_for_model

    counter = counter_for_model(None, exact=True)
    # Their classes are deprecated but still shipped; the warnings would bury the table.
    warnings.filterwarnings("ignore")

    class CountingLLM(FakeListLLM):
        """Counts with cl100k like chatmem (the default needs a GPT-2 download)."""

        def get_num_tokens(self, text: str) -> int:
            return counter.count_text(text)

    rows = []
    for name, make in (
        ("LangChain ConversationBufferWindowMemory k=5",
         lambda h: ConversationBufferWindowMemory(k=5, chat_memory=h, return_messages=True)),
        ("LangChain ConversationTokenBufferMemory 2000",
         lambda h: ConversationTokenBufferMemory(
             llm=CountingLLM(responses=["ok"]), max_token_limit=2000, chat_memory=h,
             return_messages=True)),
    ):
        path = folder / f"lc-{len(rows)}-{turns}.db"
        history = SQLChatMessageHistory(session_id="bench", connection=f"sqlite:///{path}")
        history.add_messages([
            HumanMessage(m["content"]) if m["role"] == "user" else AIMessage(m["content"])
            for m in conversation(turns)
        ])
        memory = make(history)
        build = median_ms(lambda i, m=memory: m.load_memory_variables({}), repeat)

        def turn(i: int, m: Any = memory) -> None:
            m.load_memory_variables({})
            m.save_context({"input": f"next question {i}"}, {"output": f"reply {i}"})

        # What a chain would send: the memory's messages plus the same system and input.
        sent = [{"role": "system", "content": "You are a helpful assistant."}]
        sent += [{"role": "user" if m.type == "human" else "assistant", "content": m.content}
                 for m in memory.load_memory_variables({})["history"]]
        sent.append({"role": "user", "content": "question"})
        rows.append((name, median_ms(turn, repeat), build, counter.count_messages(sent)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--repeat", type=int, default=7, help="runs per measurement (median)")
    parser.add_argument("--peer-repeat", type=int, default=3,
                        help="runs per LangChain token-buffer measurement (it is slow)")
    args = parser.parse_args()
    try:
        import langchain_community  # noqa: F401

        peers = True
    except ImportError:
        peers = False
        print("LangChain not installed: pip install -r benchmarks/requirements.txt for peers\n")
    header = (f"{'turns':>6}  {'memory':<46} {'turn ms':>10} {'build ms':>10} {'context':>8}"
              f" {'turn × chatmem':>15}")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for turns in args.turns:
            ours = chatmem_rows(turns, args.repeat, folder)
            for label, turn, build, tokens in ours:
                print(f"{turns:>6}  {label:<46} {turn:>10.2f} {build:>10.2f} {tokens:>8}")
            if peers:
                theirs = langchain_rows(turns, args.peer_repeat, folder)
                for (label, turn, build, tokens), ours_row in zip(theirs, ours, strict=True):
                    print(f"{turns:>6}  {label:<46} {turn:>10.2f} {build:>10.2f} {tokens:>8}"
                          f" {turn / ours_row[1]:>14.0f}×")
    print("\nturn ms: one whole turn (context, reply, commit, memory update), median;"
          " build ms: the context alone;\ncontext: tokens it would send (cl100k, chat overhead"
          " included, same system prompt and input).")


if __name__ == "__main__":
    main()
