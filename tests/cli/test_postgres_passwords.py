"""A PostgreSQL password from where libpq keeps them, never from the command line.

Issue 28, finding 8: the README put the password in `--db`, where every local
user reads it in the process list. libpq reads PGPASSWORD, ~/.pgpass (or the
file PGPASSFILE names) and a service file (`?service=NAME`, PGSERVICEFILE) on its
own; these tests check that chatmem lets it, against the test server with password
authentication switched on for one role (pg_hba.conf, then a reload), and that a
password given in the URL still works and is never shown.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_runner import invoke
from pg import PostgresServer

ROLE = "chatmem_pw"
PASSWORD = "Tr0ub4dor-pw-8817"


@dataclass(frozen=True)
class PasswordDatabase:
    socket_dir: str
    database: str

    def url(self, password: str | None = None) -> str:
        user = f"{ROLE}:{password}" if password is not None else ROLE
        return f"postgresql://{user}@/{self.database}?host={self.socket_dir}"


@pytest.fixture(scope="module")
def password_db(pg_server: PostgresServer, pg_template: str) -> Iterator[PasswordDatabase]:
    """A chatmem database whose role must give its password (scram-sha-256): the role's
    own line goes first in pg_hba.conf (the server's others stay as they are), then the
    server reloads; both are undone at the end."""
    name = pg_server.create_database(pg_template)
    with pg_server.admin() as conn:
        conn.execute("SET password_encryption = 'scram-sha-256'")
        conn.execute(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'")
        hba = Path(conn.execute("SHOW hba_file").fetchone()[0])
        before = hba.read_text(encoding="utf-8")
        hba.write_text(f"local all {ROLE} scram-sha-256\n" + before, encoding="utf-8")
        conn.execute("SELECT pg_reload_conf()")
    try:
        yield PasswordDatabase(pg_server.socket_dir, name)
    finally:
        with pg_server.admin() as conn:
            hba.write_text(before, encoding="utf-8")
            conn.execute("SELECT pg_reload_conf()")
        pg_server.drop_database(name)
        with pg_server.admin() as conn:
            conn.execute(f"DROP ROLE {ROLE}")


def sessions(url: str, env: dict[str, str | None] | None = None) -> list[str]:
    result = invoke("sessions", "list", "--json", "--db", url, env=env)
    assert result.exit_code == 0, result.stderr
    return sorted(s["name"] for s in json.loads(result.stdout))


def test_without_a_password_the_server_refuses_in_one_line(password_db: PasswordDatabase
                                                           ) -> None:
    result = invoke("sessions", "list", "--db", password_db.url(), env={"PGPASSWORD": None})
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {password_db.url()}: cannot connect: ")
    assert "password" in result.stderr and result.stderr.count("\n") == 1
    # ... and where to give it, in the same line.
    assert "~/.pgpass, PGPASSWORD or a service file" in result.stderr


def test_pgpassword_gives_the_password(password_db: PasswordDatabase) -> None:
    env = {"PGPASSWORD": PASSWORD}
    result = invoke("chat", "trip", "--provider", "scripted", "--db", password_db.url(),
                    input="hello\n", env=env)
    assert result.exit_code == 0, result.stderr
    assert "trip" in sessions(password_db.url(), env)


def test_a_wrong_pgpassword_is_refused_without_showing_it(password_db: PasswordDatabase
                                                         ) -> None:
    result = invoke("sessions", "list", "--db", password_db.url(),
                    env={"PGPASSWORD": "wrong-pw-31337"})
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "password authentication failed" in result.stderr
    assert "wrong-pw-31337" not in result.output


@pytest.mark.parametrize("where", ["home", "PGPASSFILE"])
def test_a_password_file_gives_the_password(password_db: PasswordDatabase, isolated_home: Path,
                                            tmp_path: Path, where: str) -> None:
    path = isolated_home / ".pgpass" if where == "home" else tmp_path / "passwords"
    # host:port:database:user:password; a socket connection's host is its folder.
    path.write_text(f"{password_db.socket_dir}:*:{password_db.database}:{ROLE}:{PASSWORD}\n",
                    encoding="utf-8")
    path.chmod(0o600)  # libpq ignores a password file others can read
    env = {"PGPASSWORD": None, "PGPASSFILE": str(path) if where == "PGPASSFILE" else None}
    assert sessions(password_db.url(), env) == sessions(password_db.url(), {
        "PGPASSWORD": PASSWORD})


@pytest.mark.parametrize("how", ["url", "PGSERVICE"])
def test_a_service_file_names_the_database_and_gives_the_password(
    password_db: PasswordDatabase, tmp_path: Path, how: str
) -> None:
    services = tmp_path / "pg_service.conf"
    services.write_text(f"[team]\nhost={password_db.socket_dir}\ndbname={password_db.database}\n"
                        f"user={ROLE}\npassword={PASSWORD}\n", encoding="utf-8")
    services.chmod(0o600)
    env: dict[str, str | None] = {"PGSERVICEFILE": str(services), "PGPASSWORD": None}
    if how == "url":
        url = "postgresql://?service=team"  # the whole location in the service file
    else:
        url, env["PGSERVICE"] = password_db.url(), "team"
    result = invoke("chat", "svc", "--provider", "scripted", "--db", url, input="hi\n", env=env)
    assert result.exit_code == 0, result.stderr
    assert "svc" in sessions(password_db.url(), {"PGPASSWORD": PASSWORD})
    assert PASSWORD not in result.output


def test_a_password_in_the_url_still_works_and_is_masked(password_db: PasswordDatabase,
                                                        tmp_path: Path) -> None:
    url = password_db.url(PASSWORD)
    assert sessions(url, {"PGPASSWORD": None}) == sessions(password_db.url(), {
        "PGPASSWORD": PASSWORD})
    shown = password_db.url("***")
    config = tmp_path / "c.toml"
    config.write_text(f'db = "{url}"\n', encoding="utf-8")
    result = invoke("config", "show", "--json", "--config", str(config))
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["db"] == shown
    wrong = invoke("sessions", "list", "--db", password_db.url("Wr0ng-pw-55"),
                   env={"PGPASSWORD": None})
    assert wrong.exit_code == 2
    assert wrong.stderr.startswith(f"error: {shown}: cannot connect: ")
    assert "Wr0ng-pw-55" not in wrong.output and PASSWORD not in result.output
