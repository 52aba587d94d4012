"""`chatmem serve` and a session's own model: a request naming a model runs on it, one naming
none runs on the model the session's latest turn ran on, whichever came first."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from chat_server import ChatServer
from cli_runner import run

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from starlette.testclient import TestClient

from chatmem.config.loader import load_settings
from chatmem.config.settings import Settings
from chatmem.serve.proxy import build_app


def on_m2(chat_server: ChatServer, tmp_path: Path) -> Settings:
    """serve's settings (model m1 configured) over a history whose conversation 行程 last ran
    on m2."""
    config = tmp_path / "c.toml"
    config.write_text('provider = "openai"\nmodel = "m1"\n', encoding="utf-8")
    db = tmp_path / "h.db"
    env = {"CHATMEM_CONFIG": str(config), "OPENAI_BASE_URL": chat_server.base_url,
           "CHATMEM_MODEL": ""}
    run(db, "ask", "行程", "-m", "m2", "去杭州", env=env, code=0)
    return load_settings(config, env={"OPENAI_BASE_URL": chat_server.base_url},
                         overrides={"db": str(db)})


@pytest.mark.parametrize(("named", "sent"), [
    (["", "m1", ""], ["m2", "m1", "m1"]),
    (["m1", "", "m3", ""], ["m1", "m1", "m3", "m3"]),
], ids=["none-first", "named-first"])
def test_a_named_model_runs_and_none_named_runs_the_sessions(
        chat_server: ChatServer, tmp_path: Path, named: list[str], sent: list[str]) -> None:
    settings = on_m2(chat_server, tmp_path)
    chat_server.requests.clear()
    with TestClient(build_app(settings, strategy="window")) as http:
        answered = [http.post("/v1/chat/completions",
                              headers={"X-Chatmem-Conversation": quote("行程")},
                              json={"model": model, "messages": [
                                  {"role": "user", "content": f"第{n}个问题"}]})
                    for n, model in enumerate(named)]
    assert [a.status_code for a in answered] == [200] * len(named), answered[-1].text
    assert [r["model"] for r in chat_server.requests] == sent
    # The response names the model the request named (none: none).
    assert [a.json()["model"] for a in answered] == named


def test_a_404_for_a_model_no_request_named_does_not_blame_the_request(
        chat_server: ChatServer, tmp_path: Path) -> None:
    settings = on_m2(chat_server, tmp_path)
    said = []
    with TestClient(build_app(settings, strategy="window")) as http:
        for conversation, model in [("行程", ""), ("新的", ""), ("行程", "m3")]:
            chat_server.plan = ["404"]
            refused = http.post("/v1/chat/completions",
                                headers={"X-Chatmem-Conversation": quote(conversation)},
                                json={"model": model, "messages": [
                                    {"role": "user", "content": "还在吗"}]})
            assert refused.status_code == 404, refused.text
            said.append(refused.json()["error"]["message"])
    assert said == [
        "the upstream model answered 404: the conversation's latest turn ran on that model;"
        " name a model in the request",
        "the upstream model answered 404: it is the server's configured model; name a model"
        " in the request",
        "the upstream model answered 404: check the model the request names"]
