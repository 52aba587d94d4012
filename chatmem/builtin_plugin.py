"""chatmem's own strategies, providers and embedders, registered through the hook a
plugin's `register(plugins)` is (chatmem.plugins loads this module first, the same way)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatmem import embeddings, providers
from chatmem.memory.buffer import BufferStrategy
from chatmem.memory.entity import EntityStrategy
from chatmem.memory.retrieval import RetrievalStrategy
from chatmem.memory.summary import SummaryStrategy
from chatmem.memory.summary_buffer import SummaryBufferStrategy
from chatmem.memory.token_budget import TokenBudgetStrategy
from chatmem.memory.window import WindowStrategy

if TYPE_CHECKING:
    from chatmem.plugin_entries import Plugins


def register(plugins: Plugins) -> None:
    # In the order DESIGN and the README list them; `eval` compares in this order too.
    for strategy in (BufferStrategy, WindowStrategy, TokenBudgetStrategy, SummaryStrategy,
                     SummaryBufferStrategy, EntityStrategy, RetrievalStrategy):
        plugins.add_strategy(strategy)
    plugins.add_provider("local", providers.local_provider, models=providers.local_models)
    plugins.add_provider("openai", providers.openai_provider, models=providers.openai_models)
    plugins.add_provider("scripted", providers.scripted_provider)
    plugins.add_embedder("local", embeddings.local_embedder)
    plugins.add_embedder("openai", embeddings.openai_embedder)
    plugins.add_embedder("hash", embeddings.hash_embedder)
