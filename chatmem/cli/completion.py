"""Shell completion for bash, zsh and fish: the scripts, and what chatmem's values complete to.

The shell asks `chatmem` itself (Typer's protocol: `_CHATMEM_COMPLETE`), and
chatmem answers from the history and the strategy registry as they are now:
session names, strategy names and, after a colon, their parameters
(`window:k=`), template names. All three scripts ask in the one form that carries
a line of help with each value (Typer's fish form), and each shell shows it its
own way. bash splits words at `:` and `=` (COMP_WORDBREAKS), which strategy specs
hold; its script completes the whole word and hands bash back only the part after
the last break, as bash-completion's `__ltrim_colon_completions` does.

A completion never prompts (not for a history key), never creates a file, and
says nothing when it cannot read the history: it offers nothing then.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

SHELLS = ("bash", "zsh", "fish")
PROG = "chatmem"
# COLUMNS: Typer renders each value's help with Rich, which wraps it at the terminal's width
# into lines the shell would take for values.
ASK = (f"env COLUMNS=10000 _CHATMEM_COMPLETE=complete_fish _TYPER_COMPLETE_FISH_ACTION=get-args "
       f"_TYPER_COMPLETE_ARGS=\"$typed\" {PROG} 2>/dev/null")

BASH = r"""
_chatmem_completion() {
    local IFS=$'\n' typed cur prefix reply
    if [[ -n ${COMP_LINE+set} ]]; then
        typed=${COMP_LINE:0:COMP_POINT}
    else
        typed="${COMP_WORDS[*]:0:COMP_CWORD+1}"
    fi
    # The whole word being typed; bash replaces only what follows its last : or = (when
    # COMP_WORDBREAKS holds them), so that much is cut from each value.
    cur=${typed##*[[:space:]]}
    local breaks=${COMP_WORDBREAKS//[^:=]/}
    prefix=
    if [[ -n $breaks ]]; then
        prefix=${cur%"${cur##*["$breaks"]}"}
    fi
    COMPREPLY=()
    for reply in $(%(ask)s); do
        reply=${reply%%%%$'\t'*}
        COMPREPLY+=("${reply#"$prefix"}")
    done
    if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *[=:] ]]; then
        compopt -o nospace 2>/dev/null
    fi
    return 0
}

complete -o default -F _chatmem_completion chatmem
""".strip().replace("%(ask)s", ASK).replace("%%", "%")

ZSH = r"""
#compdef chatmem

_chatmem_completion() {
  local typed line value
  local -a described unspaced
  typed="${words[1,$CURRENT]}"
  for line in "${(@f)$(%(ask)s)}"; do
    [[ -z $line ]] && continue
    value=${line%%%%$'\t'*}
    if [[ $value == *[=:] ]]; then
      unspaced+=("$value")
    elif [[ $line == *$'\t'* ]]; then
      described+=("${value//:/\\:}:${line#*$'\t'}")
    else
      described+=("${value//:/\\:}")
    fi
  done
  if (( ${#described} + ${#unspaced} == 0 )); then
    _files
    return
  fi
  (( ${#unspaced} )) && compadd -S '' -- "${unspaced[@]}"
  (( ${#described} )) && _describe -t values chatmem described
  return 0
}

compdef _chatmem_completion chatmem
""".strip().replace("%(ask)s", ASK).replace("%%", "%")

FISH = (
    "complete --command chatmem --no-files --arguments \"(env COLUMNS=10000 "
    "_CHATMEM_COMPLETE=complete_fish "
    "_TYPER_COMPLETE_FISH_ACTION=get-args _TYPER_COMPLETE_ARGS=(commandline -cp) chatmem)\" "
    "--condition \"env _CHATMEM_COMPLETE=complete_fish _TYPER_COMPLETE_FISH_ACTION=is-args "
    "_TYPER_COMPLETE_ARGS=(commandline -cp) chatmem\""
)
SCRIPTS = {"bash": BASH, "zsh": ZSH, "fish": FISH}


# -- what values complete to ----------------------------------------------------------

HELP_CHARS = 60
"""A value's help is one line cut to this: Typer renders it, and wraps a longer one, which
the shell would read as a value of its own."""


def _menu(candidates: list[tuple[str, str]]) -> list[tuple[str, str]]:
    from chatmem.graphemes import one_line

    return [(value, one_line(help_text, HELP_CHARS)) for value, help_text in candidates]


def _settings(ctx: typer.Context) -> Any:
    from chatmem.cli.opening import settings_from

    return settings_from(ctx.params.get("config"), ctx.params.get("db"))


def session_names(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """The sessions of the history the command line names (--db, --config), with their
    strategy and length; nothing when there is none or it cannot be read without asking."""
    from chatmem.app.sessions import list_sessions
    from chatmem.app.workspace import Workspace
    from chatmem.errors import ChatmemError
    from chatmem.render.counts import counted

    try:
        # create=False: never a new file; no ask_key: an encrypted history without
        # CHATMEM_KEY (or key_command) completes nothing rather than prompting.
        with Workspace(_settings(ctx), create=False) as workspace:
            if not workspace.has_history:
                return []
            rows = list_sessions(workspace)
    except (ChatmemError, OSError):
        return []
    return _menu([(row.name, f"{row.strategy} · {counted(row.turns, 'turn')}") for row in rows
                  if row.name.startswith(incomplete)])


def more_sessions(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """`index SESSION...`: the sessions not named yet."""
    named = set(ctx.params.get("sessions") or ())
    return [row for row in session_names(ctx, incomplete) if row[0] not in named]


def first_session(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """`ask [SESSION] TEXT`: sessions for the first word only."""
    if ctx.params.get("words"):
        return []
    return session_names(ctx, incomplete)


def strategy_specs(incomplete: str) -> list[tuple[str, str]]:
    """Strategy names, `A+B`, and after a colon their parameters: `window:k=`."""
    from chatmem.memory.spec_candidates import spec_candidates
    from chatmem.plugins import load_registries

    return _menu(spec_candidates(incomplete, load_registries().strategies))


def template_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """The templates of the config file and its templates/ folder."""
    from chatmem.config.templates import known_templates
    from chatmem.errors import ChatmemError

    try:
        names = known_templates(_settings(ctx))
    except (ChatmemError, OSError):
        return []
    return [name for name in names if name.startswith(incomplete)]


# -- --show-completion [SHELL] and --install-completion [SHELL] ---------------------------


def _shell(value: str) -> str:
    """The shell named, or the one chatmem runs in; UsageError otherwise."""
    from chatmem.errors import UsageError

    if value:
        if value not in SHELLS:
            raise UsageError(f"no completion for {value!r}: name bash, zsh or fish")
        return value
    import shellingham

    try:
        name = str(shellingham.detect_shell()[0])
    except shellingham.ShellDetectionFailure:
        name = ""
    if name not in SHELLS:
        raise UsageError(f"cannot tell which shell this is ({name or 'none found'}); name "
                         "it: --show-completion bash, zsh or fish")
    return name


ACTIONS = ("--show-completion", "--install-completion")


def completion_request(args: Sequence[str]) -> tuple[str, str] | None:
    """(`--show-completion` or `--install-completion`, the shell named or "") when the
    command line is one of them (`chatmem --show-completion zsh`), else None.

    Read before Click parses: Typer's own options are flags for the shell chatmem runs
    in, so `--show-completion zsh` run from bash printed bash's script.
    """
    words = list(args)
    if not words:
        return None
    action, sign, value = words[0].partition("=")
    if action not in ACTIONS or len(words) > (1 if sign else 2):
        return None
    return action, value if sign else (words[1] if len(words) == 2 else "")


def run_request(action: str, shell: str) -> None:
    """Print or install the script; a shell chatmem has none for is a usage error."""
    chosen = _shell(shell)
    if action == "--show-completion":
        typer.echo(SCRIPTS[chosen])
        return
    path = install(chosen, Path.home())
    typer.echo(f"{chosen} completion installed in {path}; it takes effect in a new shell")


def install(shell: str, home: Path) -> Path:
    """Write the script where `shell` finds it, and the line that loads it (bash, zsh)."""
    if shell == "fish":
        path = home / ".config" / "fish" / "completions" / f"{PROG}.fish"
        rc, line = None, ""
    elif shell == "zsh":
        path = home / ".zfunc" / f"_{PROG}"
        rc, line = home / ".zshrc", "fpath+=~/.zfunc; autoload -Uz compinit; compinit"
    else:
        path = home / ".bash_completions" / f"{PROG}.sh"
        # Quoted as shlex.quote does an unsafe word, always: a home as /tmp/o'brien gives
        # a line bash reads, and any other the line earlier versions wrote (found, not
        # added again).
        quoted = str(path).replace("'", "'\"'\"'")
        rc, line = home / ".bashrc", f"source '{quoted}'"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SCRIPTS[shell] + "\n", encoding="utf-8")
    if rc is not None:
        # As bytes: a shell's rc file may hold any encoding, and is appended to, not rewritten.
        text = rc.read_bytes() if rc.is_file() else b""
        added = os.fsencode(line)
        if added not in text:
            with rc.open("ab") as f:
                f.write(b"" if not text or text.endswith(b"\n") else b"\n")
                f.write(added + b"\n")
    return path


HELP = {
    "install_completion": "Install completion for SHELL (bash, zsh or fish; default: the "
                          "shell this runs in): --install-completion [SHELL].",
    "show_completion": "Print the completion script for SHELL (bash, zsh or fish; default: "
                       "the shell this runs in): --show-completion [SHELL].",
}
"""Typer's two options, as chatmem answers them (completion_request)."""
