"""`retrieval`'s meaning of an input that names speakers, read with them left out in part.

In a chat whose messages open with their speaker's label (`alice: …`, a group
chat or an imported log), every message of a speaker holds their name, so its
vector leans toward the name as much as toward what it says. "What activities
has alice done with her family?" then ranks by meaning any of alice's
messages near the ones about her family, and evidence that shares no word
with the question ("took the kids to the museum") lost its place to them.
Who is named is the speaker prior's to weigh (chatmem.memory.speaker_prior);
here the input's vector is blended with that of the input with the named
speakers put as "they", and messages are ranked by meaning again
(benchmarks/recall.py --dev; see RetrievalParams.unnamed for the figures).
A question that names no speaker, and a chat without labels, change nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chatmem.errors import ChatmemError
from chatmem.memory import speaker_prior
from chatmem.memory.packing import Ranked

if TYPE_CHECKING:
    import numpy as np

    from chatmem.memory.recall_sources import StoredRecall
    from chatmem.memory.recall_vectors import Dense


@dataclass(frozen=True)
class Reread:
    """Meaning scores of the input read with `names` left out in part."""

    scores: np.ndarray
    names: tuple[str, ...]
    """The speakers named (labels as compared), in order."""


def reread(ranked: Sequence[Ranked], query: str, asker: str | None, found: Dense,
           source: StoredRecall, share: float) -> Reread | None:
    """The meaning of `query` over `found`'s messages from a vector that is `share` that of
    the query without the speakers of `ranked` it names, the rest its own; None when it
    names none, the scores cannot be worked out again (where the database picked the
    candidates for the first vector), or the embedder fails (the first scores stand)."""
    import numpy as np

    if not share or found.again is None or found.asked is None:
        return None
    # A speaker labels more than one message: "What's the cabin Wi-Fi password?" asked
    # without the one line "Cabin Wi-Fi: …" opens with ("What's the they password?") lost
    # what it asks for.
    named = speaker_prior.named_speakers(ranked, query, asker, at_least=2)
    if not named:
        return None
    text = speaker_prior.unnamed(query, named)
    if text == query:
        return None
    try:
        other = np.asarray(source.query_vector(text), np.float32)
    except ChatmemError:
        return None

    def unit(vector: np.ndarray) -> np.ndarray:
        return vector / max(float(np.linalg.norm(vector)), 1e-12)

    own = np.asarray(found.asked, np.float32)
    if other.shape != own.shape:
        return None
    blended = unit((1 - share) * unit(own) + share * unit(other))
    return Reread(found.again(blended), tuple(sorted(named)))
