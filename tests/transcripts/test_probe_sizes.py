"""A probe's expected lists are checked in time that grows with their length, not its square
(attack71): an eval dataset is a file anyone may hand over."""

from __future__ import annotations

import json
import time

from chatmem.transcripts.reader import parse_transcript


def _parsed_in(probes: list[list[str]]) -> float:
    lines = [json.dumps({"role": "user", "content": "我们五月去杭州", "id": "u1"})]
    lines += [json.dumps({"probe": "去哪?", "expect_text": texts}, ensure_ascii=False)
              for texts in probes]
    text = "\n".join(lines) + "\n"
    start = time.perf_counter()
    parsed = parse_transcript(text, "probes.jsonl")
    took = time.perf_counter() - start
    assert sum(len(p.expect_text) for p in parsed.probes) == sum(map(len, probes))
    return took


def test_one_probe_of_many_expected_texts_is_checked_in_linear_time() -> None:
    """Each expected text was looked for in a slice of all those before it: a probe of
    40,000 (a 1 MB line) took a minute, 10,000 eight seconds. One probe of 20,000 against the
    same texts in 20 probes of 1,000: a linear check takes about as long for either; the
    quadratic one took over 20 times as long for the one."""
    texts = [f"杭州{i}号" for i in range(20_000)]
    took_one = min(_parsed_in([texts]) for _ in range(2))
    took_many = min(_parsed_in([texts[i:i + 1000] for i in range(0, 20_000, 1000)])
                    for _ in range(2))
    assert took_one < 5 * took_many + 0.5, (took_one, took_many)
