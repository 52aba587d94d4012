"""Which of a model's server's 404s say the model is unknown (said_model_unknown): the
bodies real servers send, read by the openai SDK as chatmem's client reads them."""

from __future__ import annotations

import json

import httpx2 as httpx
import openai
import pytest

from chatmem.providers.openai_errors import said_model_unknown

BODIES = {
    "openai-model": ({"error": {"message": "The model `gpt-9` does not exist or you do not"
                                " have access to it.", "type": "invalid_request_error",
                                "code": "model_not_found"}}, True),
    "openai-path": ({"error": {"message": "Invalid URL (POST /v1/chat/completionss)",
                               "type": "invalid_request_error", "code": None}}, False),
    "vllm-model": ({"object": "error", "message": "The model `qwen` does not exist.",
                    "type": "NotFoundError", "param": None, "code": 404}, True),
    "fastapi-path": ({"detail": "Not Found"}, False),
    "anthropic-model": ({"type": "error", "error": {"type": "not_found_error",
                                                    "message": "model: claude-x"}}, True),
    "anthropic-path": ({"type": "error", "error": {"type": "not_found_error",
                                                   "message": "Not Found"}}, False),
    "together-model": ({"error": {"message": "Model not found, inaccessible, and/or not"
                                  " deployed", "code": "model_not_available"}}, True),
    "azure-deployment": ({"error": {"code": "DeploymentNotFound", "message": "The API"
                                    " deployment for this resource does not exist."}}, True),
    "ollama-model": ({"error": {"message": 'model "qwen2:7b" not found, try pulling it'
                                " first", "type": "api_error"}}, True),
    "go-path": ("404 page not found", False),
    # Gateways and self-hosted servers in China answer in Chinese (a 404 whose words alone
    # say which): read as the English ones are.
    "zh-model": ({"error": {"message": "模型 qwen-max-x 不存在，请检查模型名称",
                            "type": "invalid_request_error"}}, True),
    "zh-model-unfound": ({"error": {"message": "未找到模型：glm-9"}}, True),
    "zh-hant-model": ({"error": {"message": "找不到模型 gpt-9"}}, True),
    "zh-path": ({"error": {"message": "接口不存在：/chat/completionss"}}, False),
    "zh-page": ("<html><title>404 页面未找到</title></html>", False),
    "nginx-path": ("<html><head><title>404 Not Found</title></head></html>", False),
}


@pytest.mark.parametrize(("body", "unknown"), BODIES.values(), ids=BODIES.keys())
def test_only_a_404_that_says_so_is_a_model_unknown(body: object, unknown: bool) -> None:
    """Leftover: every 404 was "no such model", a base_url missing its path too."""
    response = httpx.Response(404, request=httpx.Request(
        "POST", "http://127.0.0.1:9/v1/chat/completions"),
        text=body if isinstance(body, str) else json.dumps(body))
    client = openai.OpenAI(api_key="unused", base_url="http://127.0.0.1:9/v1")
    error = client._make_status_error_from_response(response)
    assert isinstance(error, openai.NotFoundError)
    assert said_model_unknown(error) is unknown
