"""The contract over a dated transcript of several days: every registered strategy (and a
plugin's reading `request.said_at` as the README says it may) builds each turn, an eval
probe and an input exported without its time, in the user's zone."""

from __future__ import annotations

import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from plugin_site import Install
from registered import STRATEGIES

from chatmem.embeddings.hashed import HashEmbedder
from chatmem.evaluation.replay import replay
from chatmem.plugins import load_registries
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store
from chatmem.transcripts.reader import parse_transcript

ZONE = ZoneInfo("Asia/Shanghai")
SAID = [("2026-03-03T23:30:00+08:00", "My locker is 42. 我的储物柜是42号。"),
        ("2026-03-04T15:00:00+08:00", "明天下午三点我要和李雷见面。"),
        ("2026-03-06T07:00:00+08:00", "What did I say yesterday? 昨天我说了什么？"),
        (None, "And my locker? 我的储物柜呢？")]


def dated_transcript() -> str:
    lines: list[dict[str, object]] = [{"chatmem": 1, "title": "days"}]
    for n, (at, text) in enumerate(SAID, 1):
        lines += [{"role": "user", "content": text, "id": f"u{n}"},
                  {"role": "assistant", "content": f"OK {n}.", "id": f"a{n}"}]
        if at is not None:
            lines[-2]["ts"] = lines[-1]["ts"] = at
        if n == 2:
            lines.append({"probe": "When do I meet Li Lei? 我什么时候见李雷？",
                          "expect_ids": ["u2"]})
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def run_dated(name: str, folder: Path) -> None:
    strategies = load_registries().strategies
    with Store(folder / "d.db") as store:
        [run] = replay(parse_transcript(dated_transcript(), "days.jsonl"),
                       [strategies.parse(name)], chat_provider=ScriptedProvider(),
                       store=store, zone=ZONE, embedder=HashEmbedder(), strategies=strategies)
    assert run.turns == len(SAID) and len(run.probes) == 1


@pytest.mark.parametrize("name", STRATEGIES.contract_names())
def test_strategy_contract_over_a_dated_transcript(name: str, tmp_path: Path) -> None:
    run_dated(name, tmp_path)


DATED = '''
from chatmem.memory.assembly import assemble
from chatmem.memory.base import BaseStrategy
from chatmem.memory.context import Message, Part
from chatmem.memory.reasons import TextReason


class Today(BaseStrategy):
    name = "today"
    description = "says the day the input is said, in the user's zone"

    def build(self, request):
        day = request.said_at.astimezone(request.zone).date()
        assert request.said_at.utcoffset() == request.zone.utcoffset(request.said_at)
        said = Message.counted("system", f"today {day:%Y-%m-%d} 今天", request.counter)
        return assemble(request, [Part("summary", (said,), TextReason("the day 日期"))],
                        budget=self.budget(request))


def register(plugins):
    plugins.add_strategy(Today)
'''


@pytest.mark.parametrize("name", ["today", "today+retrieval"])
def test_a_plugin_reading_when_an_input_is_said_runs_on_every_path(
        installed: Install, tmp_path: Path, name: str) -> None:
    installed("chatmem-today", "chatmem_today", DATED)
    run_dated(name, tmp_path)
