"""The API key appears in no file and no output; what chatmem writes is private (0600).

Finding 7 of issue 13: a key pasted into api_key_env was printed by `config show`
and stored in turns.error; a key inside the base URL was printed and stored; the
history file, WAL, shm, exports and reports were created 0644.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from cli_runner import invoke
from conftest import needs_sqlcipher

from chatmem.privacy.secrets import redacted_url
from chatmem.store import Store

KEY = "sk-test-SECRET-4b1d2c3e4f5a6b7c"
URL_KEY = "URLKEY-77aa88bb99cc"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def run(args: list[str], home: Path, stdin: str = "") -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHATMEM_"))}
    env.update(HOME=str(home), OPENAI_API_KEY=KEY, NO_COLOR="1", COLUMNS="200")
    done = subprocess.run([sys.executable, "-m", "chatmem", *args], input=stdin,
                          capture_output=True, text=True, env=env, timeout=120)
    return done.returncode, done.stdout + done.stderr


def run_here(args: list[str], home: Path, stdin: str | None = None) -> tuple[int, str]:
    """`run` in this process (the commands that only read and write files: a process
    costs over a second of CPU here), in the same environment."""
    env: dict[str, str | None] = {k: None for k in os.environ
                                  if k.startswith(("OPENAI_", "CHATMEM_"))}
    env.update(HOME=str(home), OPENAI_API_KEY=KEY, NO_COLOR="1")
    done = invoke(*args, input=stdin, env=env, width=200)
    return done.exit_code, done.stdout + done.stderr


def test_the_key_reaches_no_file_and_no_output(tmp_path: Path, chat_server) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    os.umask(0o022)
    port = chat_server.base_url.split(":")[2].split("/")[0]
    config = work / "config.toml"
    config.write_text(f'base_url = "http://user:{URL_KEY}@127.0.0.1:{port}/v1"\n'
                      'model = "m"\nmax_retries = 0\ntimeout = 120\n', encoding="utf-8")
    db = work / "h.db"
    common = ["--db", str(db), "--config", str(config)]
    outputs = []
    chat_server.plan = ["ok", "ok", "ok", "ok", "401", "echo-key"]  # chat + summary calls
    chat = ["chat", "s", "--provider", "openai", "-s", "summary", *common]
    # The two turns that go well only make the history: in this process. The failing two
    # are real processes (a failed turn's exit code and its traceback-free stderr).
    outputs += [run_here(chat, home, text) for text in ("my order is ORD-1\n", "and again\n")]
    outputs += [run(chat, home, text) for text in ("this one fails\n", "echo it\n")]
    assert [code for code, _ in outputs] == [0, 0, 1, 1]
    for args in (["config", "show", "--config", str(config)],
                 ["config", "show", "--json", "--config", str(config)],
                 ["sessions", "list", "--json", *common],
                 ["sessions", "export", "s", "-o", str(work / "s.jsonl"), *common],
                 ["sessions", "export", "s", "--format", "markdown", "-o", str(work / "s.md"),
                  *common],
                 ["inspect", "s", "--json", *common],
                 ["inspect", "s", "--turn", "3", *common],
                 ["replay", "s", "-s", "window", "--report", str(work / "r.html"), *common]):
        # These only read the history and write files: the same code in this process.
        outputs.append(run_here(args, home))
        assert outputs[-1][0] == 0, outputs[-1][1]
    everything = "\n".join(text for _, text in outputs)
    with Store(db) as store:  # the faults did happen: a refused key, an echoed one
        failed = [t for t in store.turns.turns(store.sessions.session("s").id) if t.status != "ok"]
    assert [(t.input, t.status) for t in failed] == [("this one fails", "failed"),
                                                   ("echo it", "failed")]
    # Every file chatmem wrote (the config holding the URL key is the test's own).
    files = [p for root in (home, work) for p in root.rglob("*") if p.is_file() and p != config]
    assert {p.name for p in files} >= {"h.db", "s.jsonl", "s.md", "r.html"}
    # A server may quote the Authorization header: the key, or user:key in base64.
    basic = base64.b64encode(f"user:{URL_KEY}".encode()).decode()[:16]
    for secret in (KEY, URL_KEY, basic):
        assert secret not in everything
        for path in files:
            assert secret.encode() not in path.read_bytes(), path
    for name in ("h.db", "s.jsonl", "s.md", "r.html"):
        assert mode(work / name) == 0o600, name


def test_the_history_file_and_its_wal_and_shm_are_private(tmp_path: Path) -> None:
    os.umask(0o022)
    db = tmp_path / "h.db"
    with Store(db) as store:
        store.sessions.create_session("s", "buffer")
        assert {p.name: mode(p) for p in tmp_path.iterdir()} == {
            "h.db": 0o600, "h.db-wal": 0o600, "h.db-shm": 0o600}


def test_config_init_creates_a_private_file(tmp_path: Path) -> None:
    os.umask(0o022)
    target = tmp_path / "config.toml"
    result = invoke("config", "init", "--config", str(target))
    assert result.exit_code == 0, result.stderr
    assert mode(target) == 0o600


@pytest.mark.parametrize(("table", "key"), [("", "api_key_env"),
                                            ("[embeddings]\n", "embeddings.api_key_env")])
def test_a_key_pasted_into_api_key_env_is_refused_without_repeating_it(
        tmp_path: Path, table: str, key: str) -> None:
    """[embeddings]' own api_key_env was not checked: `config show` printed the key."""
    config = tmp_path / "config.toml"
    config.write_text(f'{table}api_key_env = "{KEY}"\n', encoding="utf-8")
    result = invoke("config", "show", "--config", str(config))
    assert result.exit_code == 2
    assert result.stderr == (f"error: {config}: key '{key}' must name an environment"
                             " variable (e.g. OPENAI_API_KEY), not hold the key itself\n")
    assert KEY not in result.output


@pytest.mark.parametrize("table", ["", "[embeddings]\n"])
def test_a_base_url_of_the_wrong_type_is_named_not_repeated(tmp_path: Path, table: str) -> None:
    """A URL in a list (a TOML slip) holding a key: [embeddings]' error quoted it whole."""
    config = tmp_path / "config.toml"
    config.write_text(f'{table}base_url = ["https://user:{URL_KEY}@api.example.com/v1"]\n',
                      encoding="utf-8")
    result = invoke("config", "show", "--config", str(config))
    assert result.exit_code == 2
    assert "base_url" in result.stderr and "a list" in result.stderr
    assert URL_KEY not in result.output


@pytest.mark.parametrize(("url", "shown"), [
    (f"https://user:{URL_KEY}@api.example.com/v1", "https://user:***@api.example.com/v1"),
    (f"https://{URL_KEY}@api.example.com/v1", "https://***@api.example.com/v1"),
    (f"https://api.example.com/v1?api-key={URL_KEY}&x=1",
     "https://api.example.com/v1?api-key=***&x=***"),
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
])
def test_a_key_inside_the_base_url_is_never_shown(url: str, shown: str, tmp_path: Path) -> None:
    assert redacted_url(url) == shown
    config = tmp_path / "config.toml"
    config.write_text(f'base_url = "{url}"\n', encoding="utf-8")
    result = invoke("config", "show", "--config", str(config))
    assert result.exit_code == 0, result.stderr
    assert URL_KEY not in result.output


def _texts_of_every_output(db: Path, work: Path, env: dict[str, str]) -> str:
    """What every reading command prints and writes for the history: shows, exports, inspect."""
    common = ["--db", str(db)]
    printed = []
    for args in (["sessions", "show", "s", *common],
                 ["sessions", "show", "s", "--json", *common],
                 ["sessions", "export", "s", "-o", str(work / "s.jsonl"), *common],
                 ["sessions", "export", "s", "-o", str(work / "s.md"), *common],
                 ["sessions", "export", "--all", "-o", str(work / "all.zip"), *common],
                 ["inspect", "s", "--json", *common],
                 ["inspect", "s", "--turn", "1", *common]):
        result = invoke(*args, env=env)
        assert result.exit_code == 0, result.output
        printed.append(result.output)
    with zipfile.ZipFile(work / "all.zip") as archive:
        printed += [archive.read(name).decode("utf-8") for name in archive.namelist()]
    printed += [(work / name).read_text(encoding="utf-8") for name in ("s.jsonl", "s.md")]
    return "\n".join(printed)


def test_a_reply_that_quotes_the_api_key_is_masked_wherever_it_goes(
        tmp_path: Path, chat_server) -> None:
    """Issue 19, finding 5: a 200 reply echoing the Authorization header was printed,
    stored in messages and turns, and exported."""
    db = tmp_path / "h.db"
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": chat_server.base_url,
           "CHATMEM_KEY": None}
    chat_server.plan = ["echo-key-reply"]
    result = invoke("chat", "s", "--db", str(db), "--provider", "openai",
                    "--model", "m", "-s", "window", input="what did I send?\n", env=env)
    assert result.exit_code == 0, result.output
    sent = {k.lower(): v for k, v in chat_server.headers_seen[0].items()}
    assert sent["authorization"] == f"Bearer {KEY}"  # the server did see the key
    assert KEY not in result.output
    assert "Your header was Bearer [api key]; once more: [api key]." in result.stdout
    with Store(db) as store:
        sid = store.sessions.session("s").id
        assert store.history.messages(sid)[1].content == \
            "Your header was Bearer [api key]; once more: [api key]."
        assert store.turns.turns(sid)[0].reply == store.history.messages(sid)[1].content
    everything = _texts_of_every_output(db, tmp_path, env)
    assert "[api key]" in everything
    assert KEY not in everything
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_a_key_quoted_back_base64_encoded_or_as_a_model_name_is_masked(
        tmp_path: Path, chat_server) -> None:
    """A server that quotes the key base64-encoded in an error, or lists a model named
    after it: neither reaches an output or the history file."""
    db = tmp_path / "h.db"
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": chat_server.base_url,
           "CHATMEM_KEY": None}
    encoded = base64.b64encode(KEY.encode()).decode()
    chat_server.plan = ["echo-key-base64"]
    failed = invoke("chat", "s", "--db", str(db), "--provider", "openai", "--model", "m",
                    input="hi\n", env=env)
    assert "bad credential [api key]" in failed.stderr
    chat_server.models = ["gpt-small", f"model-{KEY}"]
    listed = invoke("models", "--provider", "openai", "--json", env=env, code=0)
    assert json.loads(listed.stdout)["models"] == ["gpt-small", "model-[api key]"]
    for secret in (KEY, encoded):
        assert secret not in failed.output + listed.output
        for path in tmp_path.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path


def _echoed_reply_masked(tmp_path: Path, chat_server, plan: str, said: str,
                         forms: tuple[str, ...]) -> None:
    """`ask` against an endpoint replying with the key disguised by `plan`: the reply is
    printed and stored as `said`, and no piece of the key in `forms` is in the output or any
    file under the test's directory."""
    db = tmp_path / "h.db"
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": chat_server.base_url,
           "CHATMEM_KEY": None}
    chat_server.plan = [plan]
    result = invoke("ask", "s", "说说", "--db", str(db), "--provider", "openai",
                    "--model", "m", env=env)
    assert result.exit_code == 0, result.output
    assert said in result.stdout
    with Store(db) as store:
        assert store.history.messages(store.sessions.session("s").id)[1].content == said
    for form in forms:
        assert form not in result.output
        for path in tmp_path.rglob("*"):
            if path.is_file():
                assert form.encode() not in path.read_bytes(), path


def test_a_key_echoed_with_a_zero_width_space_in_full_width_or_wrapped_is_masked(
        tmp_path: Path, chat_server) -> None:
    """Attack: a hostile endpoint's reply spelled the key so that a plain match missed it
    (a zero-width space inside, full-width letters, a line break inside): each was printed
    and stored as sent."""
    wide = "".join(chr(ord(c) + 0xFEE0) for c in KEY)
    _echoed_reply_masked(tmp_path, chat_server, "echo-key-disguised",
                         "one [api key] two [api key] three [api key] 四。",
                         (KEY[:6], wide[:9], KEY[11:]))


def test_a_key_echoed_with_an_invisible_mark_inside_is_masked(tmp_path: Path,
                                                             chat_server) -> None:
    """Attack: a hostile endpoint's reply put in the key a character that shows nothing and
    that the folded reading did not leave out (a direction mark, U+2028, a NUL, a variation
    selector, a tag character): each was printed and stored with the key's characters."""
    _echoed_reply_masked(tmp_path, chat_server, "echo-key-invisible",
                         "4 [api key] 5 [api key] 6 [api key] 7 [api key] 8 [api key] 完。",
                         (KEY[4:], KEY[8:]))


@pytest.mark.parametrize("key", ["ollama", "none", "EMPTY"])
def test_a_placeholder_key_leaves_the_model_s_own_words_alone(tmp_path: Path, chat_server,
                                                              key: str) -> None:
    """False positive: with the word a local server takes for a key (Ollama's own docs say
    api_key='ollama'; vLLM's EMPTY), every such word in a reply was printed and stored as
    [api key] ("Run `[api key] pull qwen2`", "[api key] of it"), and so sent back as memory.
    A short key with a digit (LiteLLM's sk-1234) may be real, and is still masked."""
    db = tmp_path / "h.db"
    chat_server.reply_words = ["Run `ollama pull qwen2`; ", "none of it ", "is EMPTY, ",
                               "nor sk-1234. 完。"]
    said = "Run `ollama pull qwen2`; none of it is EMPTY, nor sk-1234. 完。"
    for api_key, shown in ((key, said), ("sk-1234", said.replace("sk-1234", "[api key]"))):
        env = {"OPENAI_API_KEY": api_key, "OPENAI_BASE_URL": chat_server.base_url,
               "CHATMEM_KEY": None}
        # A session of its own per key, not named with it (a new session named with the key
        # is refused, the key as the model is).
        name = f"会话-{len(api_key)}-{api_key[:2]}"
        result = invoke("ask", name, "说说", "--db", str(db), "--provider", "openai",
                        "--model", "m", env=env)
        assert result.exit_code == 0, result.output
        assert shown in result.stdout
        with Store(db) as store:
            assert store.history.messages(store.sessions.session(name).id)[1].content == shown


def test_a_key_quoted_back_percent_encoded_is_masked(tmp_path: Path, chat_server) -> None:
    """Attack: a gateway's 400 named the URL it called with the key in its query, every
    character percent-encoded; the turn's stored error kept it."""
    db = tmp_path / "h.db"
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": chat_server.base_url,
           "CHATMEM_KEY": None}
    chat_server.plan = ["echo-key-url"]
    failed = invoke("chat", "s", "--db", str(db), "--provider", "openai", "--model", "m",
                    input="hi\n", env=env)
    assert "keyurl=[api key]" in failed.stderr
    encoded = "".join(c if c.isalnum() else f"%{ord(c):02X}" for c in KEY)
    assert encoded not in failed.output
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert encoded.encode() not in path.read_bytes(), path


@needs_sqlcipher
def test_a_reply_that_says_chatmem_key_is_masked(tmp_path: Path, chat_server) -> None:
    history_key = "history-key 钥匙 8812-QQ"
    db = tmp_path / "h.db"
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": chat_server.base_url,
           "CHATMEM_KEY": history_key}
    # A model that has seen the key somewhere says it back, in pieces.
    chat_server.reply_words = ["I know it: ", history_key[:7], history_key[7:14],
                               history_key[14:], " indeed"]
    result = invoke("chat", "s", "--db", str(db), "--provider", "openai",
                    "--model", "m", "-s", "window", input="tell me\n", env=env)
    assert result.exit_code == 0, result.output
    assert "I know it: [history key] indeed" in result.stdout
    with Store(db, key=history_key) as store:
        sid = store.sessions.session("s").id
        assert store.history.messages(sid)[1].content == "I know it: [history key] indeed"
    everything = _texts_of_every_output(db, tmp_path, env)
    assert history_key not in everything and "[history key]" in everything


def test_a_key_echoed_reformatted_is_masked(tmp_path: Path, chat_server) -> None:
    """Attack: a hostile endpoint's reply wrote the key as a model reformats it when told to
    hide it (in groups of four, lowercase percent escapes, hex bytes, struck through with a
    combining mark, split by a tab): each was printed and stored with every character."""
    _echoed_reply_masked(tmp_path, chat_server, "echo-key-reformatted",
                         "1 [api key] 2 [api key] 3 [api key] 4 [api key]\u0336 5 [api key] 完。",
                         (KEY[:8], KEY[-12:], KEY.encode().hex()[:16], "73 6b 2d 74",
                          KEY[-12:].lower(), "e\u0336s\u0336t"))
