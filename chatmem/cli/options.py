"""What the command line says: the options commands share, and the words they take."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from chatmem.cli.completion import session_names, strategy_specs, template_names
from chatmem.cli.grammar import file_name

if TYPE_CHECKING:
    from chatmem.memory.spec import StrategySpec

DbOption = Annotated[
    str | None,
    typer.Option("--db", metavar="FILE|URL", show_default=False, callback=file_name,
                 help="History file or postgresql:// URL (default: CHATMEM_DB or the user "
                      "data directory)."),
]

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", show_default=False,
                 help="Config file (default: CHATMEM_CONFIG or the user config directory)."),
]

SessionAlias = Annotated[
    str | None, typer.Option("--session", metavar="SESSION", show_default=False,
                             autocompletion=session_names,
                             help="The session, as an option (same as the first word).")
]
"""`--session` for commands whose first word is the session (see `one_session`)."""


def _check_provider(value: str | None) -> str | None:
    # The same rule as the config file and CHATMEM_PROVIDER: a typo must not reach OpenAI.
    # Imported here: the registries are not needed to print --help.
    from chatmem.cli.output import skipped_plugins, warn_about_plugins
    from chatmem.config.options import shown_value
    from chatmem.plugins import load_registries

    # Before the command's own wrapper would: a plugin skipped as it loads here is why its
    # provider is unknown, and its warning must come with the refusal.
    warn_about_plugins()
    if value is not None and value not in (names := load_registries().provider_names()):
        raise typer.BadParameter(f"must be one of {', '.join(names)}, got {shown_value(value)}"
                                 f"{skipped_plugins(value)}")
    return value


ProviderOption = Annotated[
    str | None,
    typer.Option("--provider", help="auto, local, openai, scripted, or one a plugin adds.",
                 show_default=False, metavar="NAME", callback=_check_provider),
]

ModelOption = Annotated[str | None, typer.Option("--model", "-m", help="Model name (or alias).",
                                                 show_default=False, metavar="NAME")]
StrategyOption = Annotated[
    str | None,
    typer.Option("--strategy", "-s", metavar="NAME[:K=V,...]", show_default=False,
                 autocompletion=strategy_specs,
                 help="Memory strategy (see `chatmem strategies`), optionally with parameters: "
                      "window:k=3."),
]

ParamOption = Annotated[
    list[str] | None,
    typer.Option("--param", "-p", metavar="KEY=VALUE", show_default=False,
                 help="Strategy parameter; repeatable."),
]

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
ModelOptionsOption = Annotated[
    list[str] | None,
    typer.Option("--option", "-o", metavar="KEY=VALUE", show_default=False,
                 help="Model option for this call, as KEY=VALUE or KEY VALUE: temperature, "
                      "top_p, seed, max_reply_tokens, frequency_penalty, presence_penalty, "
                      "top_k, min_p (checked) or any other field the endpoint takes (sent "
                      "as it is); repeatable."),
]
OPTION_FLAGS = ("-o", "--option")
TAKES_MODEL_OPTIONS = ("chat", "ask")
"""The commands whose -o is a model option (elsewhere -o is --output)."""


def joined_model_options(args: Sequence[str]) -> list[str]:
    """llm's `-o KEY VALUE` as `-o KEY=VALUE`, for chat and ask: Click gives an option a
    fixed number of values, and chatmem takes both forms.

    `chatmem ask -o temperature 0.2 hi` → `chatmem ask -o temperature=0.2 hi`. A KEY with
    `=` already is one value; nothing after `--` is touched.
    """
    words = list(args)
    command = next((w for w in words if not w.startswith("-")), None)
    if command not in TAKES_MODEL_OPTIONS:
        return words
    joined: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            return joined + words[i:]
        joined.append(word)
        if word in OPTION_FLAGS and i + 2 < len(words) and "=" not in words[i + 1] \
                and not words[i + 1].startswith("-"):
            joined.append(f"{words[i + 1]}={words[i + 2]}")
            i += 3
            continue
        i += 1
    return joined

TemplateOption = Annotated[
    str | None,
    typer.Option("--template", "-t", metavar="NAME", show_default=False,
                 autocompletion=template_names,
                 help="Named template (system prompt, model, strategy, options) from the "
                      "config's [templates.NAME] or templates/NAME.toml."),
]


def parse_params(pairs: Sequence[str] | None) -> dict[str, str]:
    from chatmem.config.options import keys_hidden, shown_value
    from chatmem.config.pairs import parse_pairs
    from chatmem.errors import StrategyError

    params: dict[str, str] = {}
    for pair in pairs or ():
        [(key, value)] = parse_pairs([pair], lambda pair: StrategyError(
            f"--param {shown_value(pair)} must be key=value, e.g. --param k=3")).items()
        if params.get(key, value) != value:
            raise StrategyError(
                f"--param {key} is given twice ({keys_hidden(f'{key}={params[key]}')} and "
                f"{keys_hidden(pair.strip())}); give it once")
        params[key] = value
    return params


def strategy_choice(strategy: str | None, pairs: Sequence[str] | None, *,
                    templated: bool = False) -> tuple[StrategySpec | None, dict[str, str]]:
    """`-s window:k=2 -p other=1` → (the spec, {}), parsed as replay reads it; without
    `-s`, (None, the --param values) for the session's or the configured strategy.
    `templated`: the strategy is a template's, whose parameters yield to --param (flags
    override a template)."""
    params = parse_params(pairs)
    if strategy is None:
        return None, params
    from chatmem.plugins import load_registries

    strategies = load_registries().strategies
    if templated and params:
        from chatmem.memory.spec import split_text

        names, own = split_text(strategy)
        return strategies.parse("+".join(names), {**own, **params}), {}
    return strategies.parse(strategy, params), {}


def session_first(words: Sequence[str], option: str | None,
                  usage: str) -> tuple[str | None, str]:
    """`[SESSION] THING`: one word is THING; two are SESSION and THING; --session SESSION too.

    The grammar of `ask` and `facts forget`: the session comes first, as everywhere,
    and may be left out.
    """
    from chatmem.errors import UsageError

    if len(words) == 1:
        return option, words[0]
    if len(words) == 2:
        return one_session(words[0], option), words[1]
    raise UsageError(f"usage: {usage} (quote what has spaces); got {len(words)} words: "
                     f"{' '.join(words)!r}")


def one_session(positional: str | None, option: str | None) -> str | None:
    """The session given first or with --session; both must agree."""
    return given_once(positional, option, noun="session", flag="--session")


T = TypeVar("T", str, int)


def given_once(word: T | None, option: T | None, *, noun: str, flag: str) -> T | None:
    """What a command takes as a word or as `flag`: either, or both when they agree."""
    from chatmem.errors import UsageError

    if word is not None and option is not None and word != option:
        raise UsageError(f"two {noun}s given: {word!r} and {flag} {option!r}; give one")
    return word if word is not None else option
