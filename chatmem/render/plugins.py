"""A plugin that could not be loaded, worded as the one warning line the CLI prints."""

from __future__ import annotations

from rich.text import Text

from chatmem.plugin_entries import WHAT_WENT_WRONG, PluginProblem, PluginSource, ProblemKind


def plugin_name(source: PluginSource) -> str:
    """`echo (chatmem-echo 0.1.0, entry point echo = chatmem_echo)`."""
    dist = " ".join(filter(None, (source.dist, source.version)))
    where = f"entry point {source.name} = {source.value}"
    return f"{source.name} ({dist + ', ' if dist else ''}{where})"


def plugin_problem_line(problem: PluginProblem) -> Text:
    """`warning: plugin echo (…) skipped: could not be imported: ModuleNotFoundError: …`."""
    if problem.kind is ProblemKind.SLOW:
        text = (f"plugin {plugin_name(problem.plugin)} took {problem.detail} s to load (its"
                " import and register): every command that needs a strategy, a provider or"
                " an embedder waits for it")
        return Text.assemble(("note: ", "bold"), text)
    text = (f"plugin {plugin_name(problem.plugin)} skipped: "
            f"{WHAT_WENT_WRONG[problem.kind]}: {problem.detail}")
    return Text.assemble(("warning: ", "bold yellow"), text)
