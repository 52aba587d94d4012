"""Named templates: a system prompt, model, strategy and options chosen by one name (`-t`).

A template lives in the config file (`[templates.NAME]`) or in a file of its own,
`templates/NAME.toml` beside the config file (by default in the user config directory);
the config file's wins when both name it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chatmem.config.loader import read_toml
from chatmem.config.options import check_options, key_shaped, shown_value
from chatmem.config.paths import config_dir
from chatmem.config.schema import Registered, check_template, check_template_strategy
from chatmem.config.settings import Settings
from chatmem.errors import UsageError
from chatmem.names import did_you_mean


@dataclass(frozen=True)
class Template:
    name: str
    system: str | None = None
    model: str | None = None
    strategy: str | None = None
    """`NAME[:K=V,...]`, as `--strategy` takes it."""
    options: dict[str, Any] = field(default_factory=dict)


def templates_dir(settings: Settings) -> Path:
    return (settings.source.parent if settings.source else config_dir()) / "templates"


def known_templates(settings: Settings) -> list[str]:
    folder = templates_dir(settings)
    files = [p.stem for p in folder.glob("*.toml")] if folder.is_dir() else []
    return sorted({*settings.templates, *files})


def find_template(settings: Settings, name: str,
                  registered: Registered | None = None) -> Template:
    """The template called `name`, checked; UsageError listing the known names otherwise.
    `registered` checks the strategy of a template file (the config's own templates were
    checked as it was read)."""
    if name in settings.templates:
        table = settings.templates[name]
    else:
        path = templates_dir(settings) / f"{name}.toml"
        if "/" in name or "\\" in name or not path.is_file():
            names = known_templates(settings)
            known = ", ".join(names) or "none yet"
            if key_shaped(name):  # an API key given to -t (arguments mixed up): not repeated
                raise UsageError(f"no template named {shown_value(name)} (known: {known})")
            raise UsageError(f"no template {name!r} (known: {known}; add one as "
                             f"[templates.{name}] in the config or {path})"
                             f"{did_you_mean(name, names)}")
        table = _read(path)
        if registered is not None:
            check_template_strategy(f"{path}: key 'strategy'", table, registered)
    return Template(name, system=table.get("system"), model=table.get("model"),
                    strategy=table.get("strategy"),
                    options=check_options(table.get("options", {}), f"template {name}: options"))


def _read(path: Path) -> dict[str, Any]:
    return check_template(str(path), read_toml(path, "template"))
