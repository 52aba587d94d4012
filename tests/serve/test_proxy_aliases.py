"""`chatmem serve` and the config's [aliases]: a request naming an alias runs on the model it
stands for, as `chatmem ask -m ALIAS` does, and /v1/models lists the alias beside it."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from chat_server import ChatServer
from cli_runner import run

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from starlette.testclient import TestClient

from chatmem.config.loader import load_settings
from chatmem.serve.proxy import build_app
from chatmem.store import Store

CONFIG = '''
provider = "openai"
model = "test-small"

[aliases]
"快" = "test-large"
'''


def test_an_alias_in_a_request_reaches_the_model_it_names_as_from_the_cli(
        chat_server: ChatServer, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(CONFIG, encoding="utf-8")
    db = tmp_path / "h.db"
    env = {"CHATMEM_CONFIG": str(config), "OPENAI_BASE_URL": chat_server.base_url}
    run(db, "ask", "问路", "去杭州的火车几点?", "-m", "快", env=env, code=0)
    settings = load_settings(config, env={"OPENAI_BASE_URL": chat_server.base_url},
                             overrides={"db": str(db)})
    with TestClient(build_app(settings, strategy="window")) as http:
        listed = [m["id"] for m in http.get("/v1/models").json()["data"]]
        answered = http.post("/v1/chat/completions",
                             headers={"X-Chatmem-Conversation": quote("行程")},
                             json={"model": "快@window", "messages": [
                                 {"role": "user", "content": "去杭州的火车几点?"}]})
    assert answered.status_code == 200, answered.text
    assert [sent["model"] for sent in chat_server.requests] == ["test-large", "test-large"]
    with Store(db) as store:
        assert store.sessions.session("行程").model == "test-large"
    # Listed as the model it names is, with the strategies, as a client picks them.
    assert {"快", "快@window", "快@summary-buffer"} <= set(listed)


def test_the_endpoint_s_models_are_asked_once_a_minute_not_on_every_listing(
        chat_server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GET /v1/models asked the endpoint for its list on every call (a chat UI lists them
    before each request): kept MODELS_KEPT_SECONDS, then asked again; a failure is not kept."""
    from chatmem.serve import proxy

    config = tmp_path / "config.toml"
    config.write_text(CONFIG, encoding="utf-8")
    settings = load_settings(config, env={"OPENAI_BASE_URL": chat_server.base_url},
                             overrides={"db": str(tmp_path / "h.db")})
    chat_server.models = ["模型-甲"]
    clock = [1000.0]
    monkeypatch.setattr(proxy.time, "monotonic", lambda: clock[0])

    def asked() -> int:
        return sum(path.rstrip("/").endswith("/models") for path in chat_server.paths)

    with TestClient(build_app(settings, strategy="window")) as http:
        chat_server.plan = ["401"]  # the endpoint fails: the configured model, not kept
        assert next(m["id"] for m in http.get("/v1/models").json()["data"]) == "test-small"
        for _ in range(3):
            assert "模型-甲" in [m["id"] for m in http.get("/v1/models").json()["data"]]
            assert http.get(f"/v1/models/{quote('模型-甲@window')}").status_code == 200
        assert asked() == 2
        chat_server.models = ["模型-乙"]
        clock[0] += proxy.MODELS_KEPT_SECONDS + 1
        assert "模型-乙" in [m["id"] for m in http.get("/v1/models").json()["data"]]
        assert asked() == 3
