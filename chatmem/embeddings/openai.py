"""`openai`: any OpenAI-compatible `/embeddings` endpoint (OpenAI, Ollama, vLLM, llama.cpp)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from chatmem.config.endpoint import parse_endpoint
from chatmem.embeddings.base import checked_rows, normalised
from chatmem.errors import ProviderError
from chatmem.privacy.secrets import SecretMask, credentials_of

if TYPE_CHECKING:
    import numpy as np


class OpenAIEmbedder:
    def __init__(self, model: str, *, base_url: str | None, api_key: str | None,
                 timeout: float = 60.0, max_retries: int = 2) -> None:
        import openai

        self.model = model
        self.key = f"openai:{model}"
        self._dimensions = 0  # known after the first answer
        self._learnt = threading.Lock()
        endpoint = parse_endpoint(base_url or "https://api.openai.com/v1")
        # Local servers need no key, but the client insists on one. The base URL's query
        # goes with each request, after its path (chatmem.config.endpoint).
        self._client: Any = openai.OpenAI(base_url=endpoint.base,
                                          default_query=endpoint.query or None,
                                          api_key=api_key or "none",
                                          timeout=timeout, max_retries=max_retries)
        self._where = endpoint.shown
        self._mask = SecretMask(credentials_of(api_key, base_url, None))
        """What a server's error may quote back and a message must not repeat (the key,
        one in the URL, also as Basic auth carries it): masked as the chat provider's."""

    @property
    def dimensions(self) -> int:
        """0 until the endpoint has answered once (the recall backlog's thread may be
        the first to ask): readers size vectors by what they got, not by this."""
        with self._learnt:
            return self._dimensions

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import numpy as np
        import openai

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        try:
            answer = self._client.embeddings.create(model=self.model, input=list(texts))
        except openai.APIError as e:
            reason = self._mask.mask(str(e))
            raise ProviderError(f"embeddings at {self._where} failed: {reason}") from None
        data = sorted(answer.data, key=lambda d: d.index)
        if len(data) != len(texts):
            raise ProviderError(f"embeddings at {self._where}: asked for {len(texts)} vectors,"
                                f" got {len(data)}")
        # Checked as a plugin's are (embeddings.base.checked_rows): after its first answer
        # the endpoint's vectors keep its width, or stored ones stop being comparable.
        rows, wrong = checked_rows([d.embedding for d in data], len(texts),
                                   self.dimensions or None)
        if wrong is not None:
            raise ProviderError(f"embeddings at {self._where} answered {wrong};"
                                " no vector of it is kept")
        rows = normalised(rows)
        with self._learnt:
            self._dimensions = rows.shape[1]
        return rows
