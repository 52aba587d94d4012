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
    # The response names the model that answered, as OpenAI's does: the request's, or with
    # none named the session's own (it said "" there).
    assert [a.json()["model"] for a in answered] == sent


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
            # OpenAI's code, which a client tells from a path it lacks (unknown_url).
            assert refused.json()["error"]["code"] == "model_not_found"
            said.append(refused.json()["error"]["message"])
    served = "; it has test-large, test-small"  # what the upstream lists
    assert said == [
        "the upstream model answered 404: the conversation's latest turn ran on that model;"
        f" name a model in the request{served}",
        "the upstream model answered 404: it is the server's configured model; name a model"
        f" in the request{served}",
        f"the upstream model answered 404: check the model the request names{served}"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_request_naming_no_model_is_answered_with_the_model_that_answered(
        chat_server: ChatServer, tmp_path: Path, stream: bool) -> None:
    """A request without `model` (or with only @STRATEGY) was answered `"model": ""`:
    OpenAI's field names the model that answered, here the server's m1 for a new
    conversation and the session's m2 for one that last ran on it."""
    import json

    settings = on_m2(chat_server, tmp_path)
    chat_server.requests.clear()
    answered = []
    with TestClient(build_app(settings, strategy="window")) as http:
        for conversation, body in [("新的", {}), ("行程", {}), ("行程", {"model": "@window"})]:
            body = {**body, "stream": stream,
                    "messages": [{"role": "user", "content": "还在吗"}]}
            response = http.post("/v1/chat/completions", json=body,
                                 headers={"X-Chatmem-Conversation": quote(conversation)})
            assert response.status_code == 200, response.text
            if stream:
                chunks = [json.loads(line[6:]) for line in response.text.splitlines()
                          if line.startswith("data: {")]
                assert len({chunk["model"] for chunk in chunks}) == 1, chunks
                answered.append(chunks[0]["model"])
            else:
                answered.append(response.json()["model"])
    assert [r["model"] for r in chat_server.requests] == ["m1", "m2", "m2"]
    assert answered == ["m1", "m2", "m2@window"]
