"""`chatmem mcp` and `chatmem serve`: chatmem's memory for clients other than its own REPL.

No `from __future__ import annotations` here: Typer reads the commands' annotations on every
`chatmem --help`, and annotations kept as objects are not evaluated again from strings."""

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from chatmem.cli.opening import registries, say_notice, settings_from
from chatmem.cli.options import ConfigOption, DbOption, ModelOption, ProviderOption
from chatmem.cli.output import consoles, handles_errors

if TYPE_CHECKING:
    from chatmem.serve.listening import Listening
    from chatmem.serve.tokens_file import TokensFile

TokenOption = Annotated[
    str | None, typer.Option("--token", envvar="CHATMEM_TOKEN", show_default=False,
                             metavar="TOKEN",
                             help="The bearer token every request must carry ($CHATMEM_TOKEN);"
                                  " made and printed once when listening beyond this machine."
                                  " Without one, only your own account is answered.")
]


TokensOption = Annotated[
    Path | None, typer.Option("--tokens", metavar="FILE", show_default=False,
                              help="A TOML file whose [tokens] table maps each person's bearer "
                                   "token to the history they use (their own PostgreSQL role, "
                                   "so row security holds per person).")
]


AllowOriginOption = Annotated[
    list[str] | None, typer.Option("--allow-origin", metavar="ORIGIN", show_default=False,
                                   help="A web page's origin allowed to call this server from "
                                        "the browser, e.g. http://localhost:3000 (repeatable);"
                                        " other pages and browser extensions are refused.")
]


def _origins(given: list[str] | None) -> frozenset[str]:
    from chatmem.serve.origins import allowed_origins

    return allowed_origins(given or ())


def _tokens(path: Path | None) -> "TokensFile | None":
    """The tokens file, read now (a bad one is refused before the server starts) and again
    whenever it changes (a line taken out ends that person's access at once)."""
    if path is None:
        return None
    from chatmem.serve.tokens_file import TokensFile

    return TokensFile(path, log=_log_line)


def _needs(extra: str, module: str) -> None:
    from importlib.util import find_spec

    from chatmem.errors import UsageError

    if find_spec(module) is None:
        raise UsageError(f"this needs chatmem[{extra}]: pip install -e '.[{extra}]'")


def _announcer(path: str) -> "Callable[[Listening], None]":
    def announce(where: "Listening") -> None:
        from chatmem.serve.listening import TokenMade

        err = consoles()[1]
        err.print(f"listening on {where.url}{path}", markup=False, soft_wrap=True)
        if where.made is TokenMade.ACCOUNTS_UNKNOWN:
            err.print(f"a token is asked on this machine too: this system does not show which "
                      f"account a connection comes from (no readable {where.accounts}/tcp), "
                      f"so any account here could talk to an open server", markup=False,
                      soft_wrap=True)
        if where.generated:
            # Not --token: a command line is shown to every account on the machine (ps).
            err.print(f"bearer token (shown once; next time give it in the environment,"
                      f" CHATMEM_TOKEN, not with --token, which `ps` shows to every"
                      f" account): {where.token}", markup=False, soft_wrap=True)

    return announce


def _stopping(under_way: int, told_by: int) -> None:
    import os
    import signal

    requests = "request" if under_way == 1 else "requests"
    # Only a SIGINT after the first stops the server at once: told by a SIGTERM (a
    # service manager, kill) or a SIGHUP, nobody may be at a terminal to press Ctrl-C, and
    # a second SIGTERM waits as the first does.
    at_once = ("Ctrl-C again stops at once" if told_by == signal.SIGINT
               else f"a SIGINT (kill -INT {os.getpid()}) stops at once")
    consoles()[1].print(f"stopping: waiting for {under_way} {requests} under way to be "
                        f"answered and stored; {at_once}, and loses "
                        f"{'it' if under_way == 1 else 'them'}", markup=False,
                        soft_wrap=True)


@handles_errors
def mcp(
    http: Annotated[str | None, typer.Option(
        "--http", metavar="[HOST:]PORT", show_default=False,
        help="Serve streamable HTTP on this address (127.0.0.1 unless a host is given) "
             "instead of stdio.")] = None,
    token: TokenOption = None,
    tokens: TokensOption = None,
    allow_origin: AllowOriginOption = None,
    provider: ProviderOption = None,
    model: ModelOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Serve this history's memory over MCP (stdio by default): conversations, context, search,
    facts, what-ifs; for Claude Desktop, Claude Code, Cursor and any MCP client.

    \b
    Example: chatmem mcp --db ~/chatmem.db   (in a client's MCP server list)
    """
    _needs("serve", "mcp")
    from chatmem.app.server_history import check_history
    from chatmem.mcp.server import build_server

    settings = settings_from(config, db, provider, model)
    people = _tokens(tokens)
    origins = _origins(allow_origin)
    server = build_server(settings, histories=people is not None, log=_log_line)
    if http is None:
        # Over stdio a client app starts it, and shows a tool's error where it shows nothing
        # of stderr: a bad history is said by each tool call, without its path (test_memory).
        from chatmem.mcp.stdio import run_stdio

        run_stdio(server, abandon=_client_gone)
        return
    from chatmem.app.server_history import check_choices
    from chatmem.serve.guards import guarded
    from chatmem.serve.listening import listening, serve_http
    from chatmem.serve.origins import MCP_PAGES

    # Said before "listening", not by every tool call: an uninstalled plugin's name too.
    check_choices(settings, registries(), None, replies=False)
    check_history(settings, say_notice)

    where = listening(http, token, tokens_given=people is not None)
    from mcp.server.transport_security import TransportSecuritySettings

    # The SDK's own Host check is off whoever guards the server: without a token chatmem's
    # (ThisMachineOnly) answers this machine's programs, where the SDK's refused a loopback
    # Host without its port (421 to curl on port 80); with one, the bearer token is what
    # a rebound page cannot send, and the SDK's refused the public name a reverse proxy
    # passes on (421, and a multi-line warning in the log).
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    from chatmem.mcp.draining import CallsFinishFirst
    from chatmem.mcp.http_bodies import OneMessageBodies

    calls = CallsFinishFirst(OneMessageBodies(server.streamable_http_app(
        host=where.host, transport_security=security)))
    app = guarded(calls, where, people, refused=_log_line, origins=origins, pages=MCP_PAGES)
    try:
        serve_http(app, where, _announcer("/mcp"), _stopping, told_to_stop=calls.stopping,
                   under_way=lambda: calls.under_way)
    finally:
        calls.ended()


def _log_line(line: str) -> None:
    """A request refused without a token (a foreign Host or Origin, another account of this
    machine), or the model's failure or the history's fault a client was told of without
    its details, in the log of the one who started the server (stderr)."""
    from chatmem.render import notice_line

    consoles()[1].print(notice_line(line), soft_wrap=True)


def _client_gone() -> None:
    """End `chatmem mcp` whose client has gone while a call still runs, as a Ctrl-C would
    end a command: what it had not committed is not stored (each write is one transaction,
    which a process that ends mid-way leaves undone), and no thread is waited for."""
    import os
    from contextlib import suppress

    from chatmem.errors import ExitCode
    from chatmem.render import notice_line

    with suppress(OSError, ValueError):  # a client gone may have taken stderr with it
        consoles()[1].print(notice_line("the client has gone: stopped without finishing "
                                        "its last calls"), soft_wrap=True)
    os._exit(int(ExitCode.INTERRUPTED))


@handles_errors
def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, metavar="PORT",
                                      help="Port to listen on.")] = 8765,
    token: TokenOption = None,
    tokens: TokensOption = None,
    allow_origin: AllowOriginOption = None,
    strategy: Annotated[str | None, typer.Option(
        "--strategy", "-s", metavar="NAME[:K=V,...]", show_default=False,
        help="Strategy for new conversations (default: the configured one; a request's "
             "model MODEL@STRATEGY picks one).")] = None,
    provider: ProviderOption = None,
    model: ModelOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Serve an OpenAI-compatible API whose every request is a turn with chatmem's memory:
    point any OpenAI client at it, and inspect what it sent with `chatmem inspect`.

    \b
    Example: chatmem serve --port 8765 -s summary-buffer   (base_url http://127.0.0.1:8765/v1)
    """
    _needs("serve", "uvicorn")
    from chatmem.app.server_history import check_choices, check_history
    from chatmem.serve.guards import guarded
    from chatmem.serve.listening import listening, serve_http
    from chatmem.serve.proxy import build_app

    settings = settings_from(config, db, provider, model)
    if strategy is not None:
        registries().strategies.parse(strategy)  # a bad name is said now, not at a request
    check_choices(settings, registries(), strategy)  # an uninstalled plugin's: said now too
    people = _tokens(tokens)
    origins = _origins(allow_origin)
    check_history(settings, say_notice)  # said before "listening", not as a traceback
    where = listening(f"{host}:{port}", token, what="--host/--port",
                      tokens_given=people is not None)
    app = guarded(build_app(settings, strategy=strategy, log=_log_line), where, people,
                  refused=_log_line, origins=origins)
    serve_http(app, where, _announcer("/v1"), _stopping)
