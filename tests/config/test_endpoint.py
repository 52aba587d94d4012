"""A model server's base URL, parsed once: its query kept apart, anything malformed refused
naming where it came from, a key in it never repeated."""

from __future__ import annotations

import pytest

from chatmem.config.endpoint import parse_endpoint
from chatmem.errors import ConfigError

KEY = "URLKEY-77aa88bb99cc"


def test_the_query_is_taken_off_the_base_and_kept() -> None:
    endpoint = parse_endpoint(f"https://gw.example.com/openai/v1?api-key={KEY}&api-version=2")
    assert endpoint.base == "https://gw.example.com/openai/v1"
    assert endpoint.query == {"api-key": KEY, "api-version": "2"}
    assert endpoint.shown == "https://gw.example.com/openai/v1?api-key=***&api-version=***"


@pytest.mark.parametrize("url", ["http://127.0.0.1:11434/v1", "HTTP://[::1]:8080/v1",
                                 "https://api.openai.com/v1", "http://модель.example/v1",
                                 f"http://user:{KEY}@127.0.0.1/v1"])
def test_a_good_base_url_has_no_query_to_keep(url: str) -> None:
    endpoint = parse_endpoint(url)
    assert endpoint.query == {} and endpoint.base.lower() == url.lower()
    assert KEY not in endpoint.shown


@pytest.mark.parametrize(("url", "said"), [
    (f"http://u:{KEY}@[::1/v1", "not a valid URL"),
    ("http://h:port/v1", "not a valid URL"),
    ("http://h:99999/v1", "not a valid URL"),
    ("http://h:0/v1", "not a valid URL"),
    (f"ftp://{KEY}@h/v1", "not an http:// or https:// URL"),
    ("localhost:11434/v1", "not an http:// or https:// URL"),
    ("http:///v1", "not an http:// or https:// URL"),
    # A key where the URL goes (the two variables swapped), or after a user name with the
    # // left out: no part of it reads as a password, and it was shown whole.
    (KEY, "URLKE… (19 characters): not an http:// or https:// URL"),
    (f"ann:{KEY}@h/v1", "ann:U… (28 characters): not an http:// or https:// URL"),
    (f"https:ann:{KEY}@h/v1", "not an http:// or https:// URL"),
    (f"http:/ann:{KEY}@h/v1", "not an http:// or https:// URL"),
    ("http://a b/v1", "a URL cannot hold \\u0020"),
    ("http://h/v1\x1b[2J", "a URL cannot hold \\u001b"),
    ("http://h/v1\udcff", "must be UTF-8 text"),
])
def test_a_malformed_base_url_is_one_line_naming_where_it_came_from(url: str, said: str
                                                                     ) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_endpoint(url, "CHATMEM_BASE_URL")
    message = str(caught.value)
    assert message.startswith("CHATMEM_BASE_URL") and said in message
    assert "\n" not in message and "\x1b" not in message and KEY not in message
