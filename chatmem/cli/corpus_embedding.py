"""`eval DIR --jobs N`: each distinct text embedded once, the work shared by the N processes.

Jobs are per transcript and embedding is nearly all of a cold eval's time, so the last
transcript ran alone on one core: the two LoCoMo dev conversations took ~66 s of wall time
for ~80 CPU-s on 2 cores (conv-26's ~44 CPU-s outlasting conv-30's ~35). So first each
transcript is run dry (app.evaluation.texts_to_embed, well under a second each), then the
distinct texts of them all that the cache does not hold yet (none on a second run: it opened a
workspace per chunk to find each there, and said it was embedding them all) are embedded in
small chunks, each taken by whichever process is free, into the user's vector cache
(app.evaluation.embed_ahead); the transcripts then run as
before, finding every vector there. Without a cache (an encrypted history keeps nothing
outside it) the vectors come back here and go to each transcript's job in memory.
A text a dry run did not name (it failed, or would have called a model) is embedded by its
transcript's own run, as before: the vectors and results are the same either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from rich.console import Console

    from chatmem.cli.corpus import CorpusJob
    from chatmem.memory.spec import StrategySpec

Text = tuple[str, bool]
"""A text and whether it is embedded as a query."""
CHUNK = 48
"""Texts a process embeds per task (~3 s of the local model): small enough that both
processes finish within one of each other, large enough that opening a workspace for
each (~0.1 s) costs little."""


def collect(job: CorpusJob) -> tuple[str, list[Text]]:
    """A worker's task: the texts `job`'s transcript will embed that the vector cache does
    not hold yet (none when it cannot say: the transcript's own run then says what is wrong)."""
    from chatmem.app.evaluation import not_kept, texts_to_embed
    from chatmem.cli.opening import open_workspace, settings_from
    from chatmem.errors import ChatmemError
    from chatmem.transcripts.reader import read_transcript

    try:
        settings = settings_from(job.config, job.db, job.provider, job.model)
        transcript = read_transcript(Path(job.path))
        if not transcript.probes or not transcript.user_turns():
            return job.path, []
        specs = specs_of(job.strategies, job.params)
        with open_workspace(settings, create=False) as ws:
            return job.path, not_kept(ws, specs, texts_to_embed(
                ws, transcript, specs,
                explicit=job.provider is not None or job.model is not None,
                answer=job.answer, with_user_facts=job.with_user_facts,
                probes_only=job.probes_only))
    except ChatmemError:
        return job.path, []


def embed(task: tuple[CorpusJob, list[Text]]) -> tuple[int, dict[Text, bytes] | None]:
    """A worker's task: embed a chunk of texts into the vector cache (or hand them back);
    how many it was given. A failure hands back nothing: each run embeds its own then, and
    says what failed."""
    from chatmem.app.evaluation import embed_ahead
    from chatmem.cli.opening import open_workspace, settings_from
    from chatmem.errors import ChatmemError

    job, texts = task
    try:
        settings = settings_from(job.config, job.db, job.provider, job.model)
        with open_workspace(settings, create=False) as ws:
            return len(texts), embed_ahead(ws, specs_of(job.strategies, job.params), texts)
    except ChatmemError:
        return len(texts), None


def embedded_ahead(pool: Any, jobs: Sequence[CorpusJob], err: Console) -> list[CorpusJob]:
    """`jobs` after their distinct texts are embedded by `pool`'s processes (with the
    vectors themselves when there is no cache to find them in)."""
    from chatmem.render.progress import task_progress
    from chatmem.render.terminal import on_screen

    wanted: dict[str, list[Text]] = dict(pool.imap_unordered(collect, jobs))
    distinct = list(dict.fromkeys(t for job in jobs for t in wanted.get(job.path, [])))
    if not distinct:
        return list(jobs)
    chunks = [(jobs[0], distinct[i : i + CHUNK]) for i in range(0, len(distinct), CHUNK)]
    handed: dict[Text, bytes] = {}
    done = 0
    if not on_screen(err):
        err.print(f"embedding {len(distinct):,} distinct texts", style="dim", markup=False,
                  soft_wrap=True)
    with task_progress(err, "embedding texts", len(distinct)) as bar:
        for count, vectors in pool.imap_unordered(embed, chunks):
            handed.update(vectors or {})
            done += count
            bar.update(done)
    if not handed:
        return list(jobs)
    return [replace(job, known=tuple((text, query, handed[(text, query)])
                                     for text, query in wanted.get(job.path, [])
                                     if (text, query) in handed)) for job in jobs]


def specs_of(strategies: Sequence[str], params: Sequence[str]) -> list[StrategySpec]:
    """The strategies a job names, as its run parses them (cli.comparing.run_comparison)."""
    from chatmem.cli.opening import registries
    from chatmem.cli.options import parse_params

    shared = parse_params(params)
    return [registries().strategies.parse(s, shared) for s in strategies]


def known_vectors(job: CorpusJob) -> dict[Text, np.ndarray] | None:
    """The vectors embedded ahead for `job` (only when no cache keeps them)."""
    if not job.known:
        return None
    import numpy as np

    return {(text, query): np.frombuffer(blob, dtype=np.float32)
            for text, query, blob in job.known}
