"""Shared fixtures. Tests are offline: tiktoken gets an empty cache directory,
so any attempt to download an encoding would fail loudly instead of passing
on a machine that happens to have one cached."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

# No test may fail for being slow: hypothesis's per-example deadline (200 ms) and its
# too-slow health check measure the machine, not chatmem, and fail on a busy one.
hypothesis_settings.register_profile("chatmem", deadline=None,
                                     suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("chatmem")

os.environ["TIKTOKEN_CACHE_DIR"] = tempfile.mkdtemp(prefix="chatmem-tiktoken-")
# One per test process (each xdist worker too): gone when it ends, not left in /tmp.
atexit.register(shutil.rmtree, os.environ["TIKTOKEN_CACHE_DIR"], ignore_errors=True)

# Where PYTHONDONTWRITEBYTECODE is set (this machine, its CI), every Python process a test
# starts (`python -m chatmem`, an MCP server) compiled chatmem's ~290 modules from source
# again, ~0.3 s of CPU a start. The processes the tests start write their compiled modules
# as Python does by default (`__pycache__`, which .gitignore names).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def point_home_at(home: Path, setenv: Callable[[str, str], object]) -> None:
    """HOME and the XDG directories chatmem, pip and platformdirs read, all under `home`."""
    setenv("HOME", str(home))
    setenv("XDG_CONFIG_HOME", str(home / ".config"))
    setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    setenv("XDG_CACHE_HOME", str(home / ".cache"))
    setenv("XDG_STATE_HOME", str(home / ".local" / "state"))


# pytest sets up module- and session-scoped fixtures before the function-scoped
# `isolated_home`, so without this they would read the user's real config and write into
# the real caches. One home per test process (each xdist worker too), gone when it ends.
PROCESS_HOME = Path(tempfile.mkdtemp(prefix="chatmem-home-"))
atexit.register(shutil.rmtree, PROCESS_HOME, ignore_errors=True)
point_home_at(PROCESS_HOME, os.environ.__setitem__)
for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CHATMEM_DB", "CHATMEM_CONFIG",
                 "CHATMEM_PROVIDER", "CHATMEM_MODEL", "CHATMEM_STRATEGY", "CHATMEM_KEY",
                 "CHATMEM_NEW_KEY", "CHATMEM_TIMEZONE"):
    os.environ.pop(variable, None)
# Days (recall's day lines, "yesterday" in an input) are the user's, read in the system's
# zone: UTC here whatever the machine's, unless a test names another.
os.environ["TZ"] = "UTC"
if hasattr(time, "tzset"):
    time.tzset()

from chat_server import ChatServer, running_chat_server  # noqa: E402
from pg import (  # noqa: E402, F401
    pg_backend,
    pg_database,
    pg_empty_url,
    pg_server,
    pg_template,
    pg_url,
    team,
)
from plugin_site import Install, install  # noqa: E402
from registered import open_session  # noqa: E402

from chatmem.config.sections import EmbeddingsSection  # noqa: E402
from chatmem.config.settings import Settings  # noqa: E402
from chatmem.embeddings import Embedder  # noqa: E402
from chatmem.engine import Engine  # noqa: E402
from chatmem.plugins import load_registries  # noqa: E402
from chatmem.providers.scripted import ScriptedProvider  # noqa: E402
from chatmem.store import Store, cipher  # noqa: E402

HISTORY_KEY = "x'" + "5a" * 32 + "'"
"""The encrypted runs' key: a raw 256-bit key, so opening skips SQLCipher's slow key
derivation (tests/store/test_encryption.py covers passphrases)."""
needs_sqlcipher = pytest.mark.skipif(not cipher.available(),
                                     reason="chatmem[encrypt] (sqlcipher3) is not installed")


WORKERS = 2
"""pytest-xdist workers for a plain `python -m pytest`: the machine the suite is measured on
has 2 cores, and each worker keeps one core busy (its subprocesses and PostgreSQL server
wait on it more than they compete with it)."""


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Run the suite on WORKERS processes unless told otherwise.

    Not `-n` in addopts: with `-p no:xdist` pytest would then refuse `-n` as unknown.
    `-n 0` (or `-p no:xdist`) runs in one process; so do `-s` (output is seen only from
    one process) and `--pdb`. Runs before xdist's own hook (a conftest's is called first).
    """
    option = config.option
    if (not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput")
            or os.environ.get("PYTEST_XDIST_WORKER") or option.numprocesses is not None
            or option.capture == "no" or option.usepdb or option.collectonly):
        return
    option.numprocesses = WORKERS
    if option.dist == "no":
        option.dist = "load"


ONE_WORKER = {
    "tests/test_complexity.py": "its histories of 100, 2,500 and 5,000 turns, built by the "
                                "module's fixtures (about 22 s of CPU), are built once",
}
"""Modules whose tests `--dist load` keeps on one worker, handed out first, and why."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist load` with the ONE_WORKER modules kept whole (xdist's own loadgroup names
    a group in the test's node id, which pytest 9 no longer lets it change)."""
    if config.option.dist != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class LoadKeepingModules(LoadScopeScheduling):
        """Every test is a unit of its own, as with "load", but a ONE_WORKER module is
        one unit; the largest unit goes out first."""

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in ONE_WORKER else nodeid

    return LoadKeepingModules(config, log)


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Each test a fresh home of its own (the process's, PROCESS_HOME, is shared by the
    module- and session-scoped fixtures set up before this one)."""
    home = tmp_path_factory.mktemp("home")
    point_home_at(home, monkeypatch.setenv)
    return home


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "chatmem.db"


@pytest.fixture
def foreign_history(tmp_path: Path) -> Path:
    """An SQLite file of another program's, under a Chinese folder name (a server's errors
    about it must not name where it is)."""
    import sqlite3

    folder = tmp_path / "服务器的历史"
    folder.mkdir()
    db = folder / "记录.db"
    with sqlite3.connect(db) as other:
        other.execute("CREATE TABLE 订单 (编号 TEXT)")
    other.close()
    return db


@pytest.fixture(params=["plain", pytest.param("encrypted", marks=needs_sqlcipher)])
def history_key(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """Run the test on a plain history file, then on an encrypted one: every test of the
    history file runs encrypted in the default run whenever the `encrypt` extra installs.

    The encrypted run sets CHATMEM_KEY too, so commands the test runs (in process
    or as a subprocess) open the same file with the same key.
    """
    if request.param == "plain":
        return None
    monkeypatch.setenv("CHATMEM_KEY", HISTORY_KEY)
    return HISTORY_KEY


SQLITE_ONLY = "sqlite_only"
"""Marks a test taking `store`/`history` that is about SQLite itself (its file, WAL, PRAGMA,
SQLCipher): its postgres run is deselected, the marker's reason says why."""


@dataclass(frozen=True)
class History:
    """Where the test's history lives: a file (plain or encrypted) or a PostgreSQL database."""

    kind: str
    """"plain", "encrypted" or "postgres"."""
    location: Path | str
    key: str | None = None

    @property
    def is_file(self) -> bool:
        return self.kind != "postgres"

    def open(self, **options: Any) -> Store:
        """Another connection to the same history (another process's view)."""
        return Store(self.location, key=self.key, **options)


@pytest.fixture(params=["plain", pytest.param("encrypted", marks=needs_sqlcipher), "postgres"])
def history(request: pytest.FixtureRequest, db_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> History:
    """The store tests' history, three times: a plain file, an encrypted one, and a fresh
    database on the test session's PostgreSQL server (skipped, saying why, without the
    `postgres` extra). The encrypted run sets CHATMEM_KEY, as `history_key` does."""
    if request.param == "postgres":
        return History("postgres", str(request.getfixturevalue("pg_url")))
    if request.param == "plain":
        return History("plain", db_path)
    monkeypatch.setenv("CHATMEM_KEY", HISTORY_KEY)
    return History("encrypted", db_path, HISTORY_KEY)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the postgres run of tests marked sqlite_only (they are about SQLite's file)."""
    keep, drop = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and callspec.params.get("history") == "postgres"
        (drop if on_postgres and item.get_closest_marker(SQLITE_ONLY) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture
def store(history: History) -> Iterator[Store]:
    with history.open() as s:
        yield s


@pytest.fixture
def scripted() -> ScriptedProvider:
    return ScriptedProvider()


@pytest.fixture
def make_engine(store: Store, scripted: ScriptedProvider) -> Callable[..., Engine]:
    """make_engine("window", k=2) → an engine on a fresh session with that strategy."""
    counter = iter(range(1, 10_000))

    def make(strategy: str = "buffer", *, name: str | None = None, system: str | None = "Be brief.",
             provider: ScriptedProvider | None = None, embedder: Embedder | None = None,
             **params: object) -> Engine:
        # No embedder unless a test brings one (the deterministic `hash` embedder):
        # results must not depend on whether the embed extra is installed.
        settings = Settings(system=system or "", embeddings=EmbeddingsSection(provider="none"))
        return open_session(
            store, settings, provider or scripted, name or f"s{next(counter)}",
            strategy=strategy, params={k: str(v) for k, v in params.items()}, embedder=embedder,
        )

    return make


@pytest.fixture(scope="session")
def hash_embedder_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A config file whose [embeddings] is the deterministic `hash` embedder."""
    path = tmp_path_factory.mktemp("config") / "hash-embedder.toml"
    path.write_text('[embeddings]\nprovider = "hash"\n', encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def hash_embedder(hash_embedder_config: Path) -> Iterator[Path]:
    """Commands run in this module recall with the `hash` embedder (CHATMEM_CONFIG).

    For tests of what recall feeds (JSON shapes, reports, storage), not of how well it
    ranks: the real local embedder reads about 15 messages a second, and tests/embeddings
    and the slow contract run cover it.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CHATMEM_CONFIG", str(hash_embedder_config))
        yield hash_embedder_config


@pytest.fixture
def retrieval_config(tmp_path: Path) -> Iterator[Path]:
    """`retrieval` by default, with the deterministic hash embedder (CHATMEM_CONFIG)."""
    path = tmp_path / "config.toml"
    path.write_text('strategy = "retrieval"\n[embeddings]\nprovider = "hash"\n',
                    encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CHATMEM_CONFIG", str(path))
        yield path


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A real OpenAI-compatible HTTP server on 127.0.0.1 (see tests/chat_server.py)."""
    with running_chat_server() as server:
        yield server


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Install]:
    """Install plugins for this test: the process's registries load afresh, with them."""
    site = tmp_path / "site"
    site.mkdir()
    modules: list[str] = []
    monkeypatch.syspath_prepend(str(site))
    load_registries.cache_clear()

    def add(dist: str, module: str, code: str, **options: Any) -> None:
        modules.append(module)
        install(site, dist, module, code, **options)

    yield add
    load_registries.cache_clear()
    for module in modules:
        sys.modules.pop(module, None)
