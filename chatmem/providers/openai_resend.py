"""Which failed chat requests the openai client may send again: those the server never
began on.

The client resends a request after a timeout, a dropped connection or a 5xx, up to
`max_retries` times. A chat completion is paid once the server has it, so a read timeout
after the body was sent (the model may still be working on it) or a gateway's 502/504 (the
model behind it may have answered, or still be answering) is not sent again: the user
chooses whether to ask again. Refused or reset connections, connect and pool timeouts, 429
and the other 5xx (the server said it did not take the request) are still retried.
"""

from __future__ import annotations

from typing import Any

import httpx2
import openai

NOT_RESENT = frozenset({502, 504})
"""Statuses a gateway answers while the model behind it may have the request."""


class ResendOnlyUnsent(openai.DefaultHttpxClient):
    """The openai client's HTTP client, telling it not to resend a POST the server has."""

    def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        if request.method != "POST":
            return super().send(request, **kwargs)
        try:
            response = super().send(request, **kwargs)
        except httpx2.ReadTimeout as e:
            # The body went out: the client resends any timeout, but not its own errors.
            raise openai.APITimeoutError(request=request) from e
        if response.status_code in NOT_RESENT:
            # The client obeys this header before its own rule (retry any 5xx).
            response.headers["x-should-retry"] = "false"
        return response
