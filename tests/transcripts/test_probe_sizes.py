"""A probe's expected lists are checked in time that grows with their length, not its square
(attack71): an eval dataset is a file anyone may hand over."""

from __future__ import annotations

import json

from growth import best_cpu_seconds

from chatmem.transcripts.reader import parse_transcript


def _transcript(probes: list[list[str]]) -> str:
    lines = [json.dumps({"role": "user", "content": "我们五月去杭州", "id": "u1"})]
    lines += [json.dumps({"probe": "去哪?", "expect_text": texts}, ensure_ascii=False)
              for texts in probes]
    return "\n".join(lines) + "\n"


def test_one_probe_of_many_expected_texts_is_checked_in_linear_time() -> None:
    """Each expected text was looked for in a slice of all those before it: a probe of
    40,000 (a 1 MB line) took a minute, 10,000 eight seconds. One probe of 20,000 against the
    same texts in 20 probes of 1,000: a linear check takes about as long for either; the
    quadratic one took over 20 times as long for the one (10.0 s against 0.96 s)."""
    texts = [f"杭州{i}号" for i in range(20_000)]
    one = _transcript([texts])
    many = _transcript([texts[i:i + 1000] for i in range(0, 20_000, 1000)])
    for text in (one, many):
        assert sum(len(p.expect_text) for p in parse_transcript(text, "p.jsonl").probes) \
            == len(texts)
    # CPU time, each side measured again while over the bound: in wall time a busy machine
    # stretched the one probe's both runs (0.95 s against 0.065 s, load 12 on 2 cores; 0.06
    # s each quiet). The quadratic check is over it every time.
    measured: list[tuple[float, float]] = []
    for _ in range(3):
        took_one = best_cpu_seconds(lambda: parse_transcript(one, "p.jsonl"), runs=2)
        took_many = best_cpu_seconds(lambda: parse_transcript(many, "p.jsonl"), runs=2)
        measured.append((took_one, took_many))
        if took_one < 5 * took_many + 0.5:
            return
    raise AssertionError(measured)
