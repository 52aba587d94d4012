"""Write the sample transcripts in this folder (deterministic; re-run to regenerate).

    python sessions/make_samples.py

support.jsonl and travel-zh.jsonl come from the hand-written dialogues next to
this script; long-chat.jsonl is 200 turns of small talk generated from a fixed
seed, with ten facts planted at known turns and probes that ask for them.

The replies are written, not generated, so each header records the offline
`scripted` provider and the cl100k_base tokenizer: replay and eval then count
exactly the same way on every machine and derive summaries and facts by the
scripted rules, unless `--provider`/`--model` name a real model to use instead.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True  # keep sessions/ free of __pycache__

import support_dialogue  # noqa: E402
import travel_zh_dialogue  # noqa: E402


def stamp(turn: int, second: int) -> str:
    minutes = turn * 2 + second
    return f"2026-03-09T{9 + minutes // 60:02d}:{minutes % 60:02d}:00+00:00"


def build(title: str, system: str, turns: list[tuple[str, str]],
          probes: list[tuple[int, str, list[str], list[str]]]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = [{"chatmem": 1, "title": title, "system": system,
                                    "provider": "scripted", "model": "scripted",
                                    "tokenizer": "cl100k_base"}]
    for number, (user, assistant) in enumerate(turns, 1):
        lines.append({"role": "user", "content": user, "id": f"t{number}u",
                      "ts": stamp(number, 0)})
        lines.append({"role": "assistant", "content": assistant, "id": f"t{number}a",
                      "ts": stamp(number, 1)})
        for after, question, ids, text in probes:
            if after == number:
                lines.append({"probe": question, "expect_ids": ids, "expect_text": text})
    return lines


# -- long chat ------------------------------------------------------------------

FACTS = {
    # turn: (user statement, assistant acknowledgement, question, expected text)
    3: ("By the way, my sister is called Ingrid and she lives in Tromsø.",
        "Ingrid in Tromsø, noted. That's far north!",
        "What is my sister's name?", "Ingrid"),
    17: ("My gym locker code is 4471, I keep forgetting it.",
         "Locker code 4471, I'll remember it for you.",
         "What's my gym locker code?", "4471"),
    38: ("I should mention I'm allergic to kiwi fruit.",
         "Understood, no kiwi fruit in any recipe ideas.",
         "Which fruit am I allergic to?", "kiwi"),
    55: ("My flight to Lisbon next month is LH2417.",
         "LH2417 to Lisbon, got it.",
         "What's my flight number to Lisbon?", "LH2417"),
    80: ("I booked the dentist for June 9 at 8:15.",
         "Dentist on June 9 at 8:15, noted.",
         "When is my dentist appointment?", "June 9"),
    101: ("The cabin Wi-Fi password is blue-otter-88.",
          "Cabin Wi-Fi: blue-otter-88.",
          "What's the cabin Wi-Fi password?", "blue-otter-88"),
    126: ("The combination for my bike lock is 3095.",
          "Bike lock 3095, remembered.",
          "What's my bike lock combination?", "3095"),
    150: ("We adopted a grey cat and named her Pixel.",
          "Pixel is a lovely name for a grey cat!",
          "What is our cat called?", "Pixel"),
    171: ("My new car's licence plate is KJ-4820.",
          "Plate KJ-4820, noted.",
          "What's my licence plate?", "KJ-4820"),
    196: ("Tomorrow's planning meeting is in room 7B.",
          "Room 7B for the planning meeting.",
          "Which room is the planning meeting in?", "7B"),
}
# Probes right after a fact (asked a few turns later), then every fact at the end.
EARLY_PROBES = {4: 3, 18: 17, 58: 55, 102: 101, 173: 171}

TOPICS = ["the weather", "a podcast", "dinner plans", "a running route", "a board game",
          "a documentary", "the garden", "a jigsaw puzzle", "a coffee shop", "a train ride",
          "a photography walk", "a bread recipe", "a museum visit", "a chess opening",
          "a playlist", "the neighbours' dog"]
OPENERS = ["I was thinking about", "Any thoughts on", "Tell me something about",
           "I spent the afternoon on", "What do you make of", "Quick question about"]
REPLIES = ["That sounds relaxing. Small routines like that add up.",
           "Interesting! It's worth trying a slightly different approach next time.",
           "Good choice. Most people enjoy it more the second time.",
           "I'd keep it simple and see how it goes.",
           "That's a nice way to spend an hour.",
           "Sounds like a plan. Let me know how it turns out."]
DETAILS = ["It was calm and sunny.", "It took longer than expected.",
           "A friend recommended it.", "I might do it again at the weekend.",
           "It was surprisingly fun.", "I'm not sure I liked it."]


def long_chat() -> list[dict[str, Any]]:
    rng = random.Random(20260309)
    turns: list[tuple[str, str]] = []
    for number in range(1, 201):
        if number in FACTS:
            user, assistant, _, _ = FACTS[number]
        else:
            user = f"{rng.choice(OPENERS)} {rng.choice(TOPICS)}. {rng.choice(DETAILS)}"
            assistant = rng.choice(REPLIES)
        turns.append((user, assistant))
    probes = [(after, FACTS[fact][2], [f"t{fact}u"], [FACTS[fact][3]])
              for after, fact in EARLY_PROBES.items()]
    probes += [(200, question, [f"t{fact}u"], [expected])
               for fact, (_, _, question, expected) in FACTS.items()]
    lines = build("long-chat", "You are a friendly assistant. Keep answers short.", turns,
                  probes)
    # Each expected text must appear only in the turn that planted it.
    for fact, (_, _, _, expected) in FACTS.items():
        holders = {line["id"][:-1] for line in lines
                   if "content" in line and expected.casefold() in line["content"].casefold()}
        assert holders == {f"t{fact}"}, (expected, holders)
    return lines


def write(name: str, lines: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    (HERE / name).write_text(text, encoding="utf-8")


def main() -> None:
    assert len(support_dialogue.TURNS) == 30
    assert len(travel_zh_dialogue.TURNS) == 60
    write("support.jsonl", build("support", support_dialogue.SYSTEM, support_dialogue.TURNS,
                                 support_dialogue.PROBES))
    write("travel-zh.jsonl", build("travel-zh", travel_zh_dialogue.SYSTEM,
                                   travel_zh_dialogue.TURNS, travel_zh_dialogue.PROBES))
    write("long-chat.jsonl", long_chat())


if __name__ == "__main__":
    main()
