"""SecretMask: a secret split over any pieces of a stream is masked, nothing else changes."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatmem.privacy.secrets import SecretMask, credentials_of, without_credentials

SECRETS = {"sk-live-ABCDEF123456": "[api key]", "钥匙-7781-key": "[history key]"}


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(st.one_of(st.sampled_from([*SECRETS, "sk-", "钥匙", "sk-live-AB", "\u200b",
                                              "\n", "ｓｋ－ｌｉｖｅ", "-ABCDEF", "㎏", "\u200e",
                                              "\u2028", "\x00", " ", "\t", "\u0336",
                                              "\u3000", "sk-l ive", "7781"]),
                             st.text(max_size=8)), max_size=8),
    cuts=st.lists(st.integers(0, 200), max_size=10),
)
def test_a_stream_cut_anywhere_is_masked_as_the_whole_text(parts: list[str],
                                                           cuts: list[int]) -> None:
    text = "".join(parts)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    mask = SecretMask(SECRETS)
    shown = [mask.feed(piece) for piece in pieces] + [mask.flush()]
    whole = SecretMask(SECRETS).mask(text)
    assert "".join(shown) == whole
    for secret in SECRETS:
        assert secret not in whole


@pytest.mark.parametrize("shown", [
    "sk-live-\u200bABCDEF123456", "ｓｋ－ｌｉｖｅ－ＡＢＣＤＥＦ１２３４５６",
    "sk-live-ABC\nDEF123456", "sk-live-ABC\r\nDEF\u00ad123456", "钥匙\u200d-7781-ｋｅｙ",
    # Marks that show nothing either: direction, separators, controls, selectors, tags.
    "sk-live-\u200eABC\u202aDEF\u2066123456", "sk-live-ABC\u2028DEF\u2029123456",
    "sk-live-ABC\x00DEF\x0b123\x7f456", "钥匙\ufe0f-7781\u034f-k\U000e0041ey"])
def test_a_secret_written_otherwise_is_masked_whole_and_only_it(shown: str) -> None:
    label = "[api key]" if shown.startswith(("s", "ｓ")) else "[history key]"
    assert SecretMask(SECRETS).mask(f"前 {shown} 后\n") == f"前 {label} 后\n"
    assert without_credentials(f"a{shown}", SECRETS) == (f"a{label}", (label,))


def test_credentials_cover_the_key_the_url_and_basic_auth_but_not_placeholders() -> None:
    found = credentials_of("sk-abc12345", "https://ana:URLKEY-99@host/v1?api-key=Q1W2E3",
                           "hist-key-1")
    assert found == {"YW5hOlVSTEtFWS05OQ==": "[api key]", "URLKEY-99": "[api key]",
                     "Q1W2E3": "[api key]", "sk-abc12345": "[api key]",
                     "c2stYWJjMTIzNDU=": "[api key]",  # the key base64-encoded
                     # … and after 0, 1 or 2 bytes of a Basic header's user:
                     "c2stYWJjMTIzND": "[api key]", "NrLWFiYzEyMzQ1": "[api key]",
                     "zay1hYmMxMjM0N": "[api key]",
                     "sk%2Dabc12345": "[api key]",  # every character percent-encoded
                     "sk%2dabc12345": "[api key]",  # … in lowercase; in hex:
                     "736b2d6162633132333435": "[api key]",
                     "736B2D6162633132333435": "[api key]",
                     "hist-key-1": "[history key]",
                     # The history key as the API key: base64, every character percent-encoded.
                     "aGlzdC1rZXktMQ==": "[history key]", "hist%2Dkey%2D1": "[history key]",
                     "aGlzdC1rZXktM": "[history key]", "hpc3Qta2V5LT": "[history key]",
                     "oaXN0LWtleS0x": "[history key]", "hist%2dkey%2d1": "[history key]",
                     "686973742d6b65792d31": "[history key]",
                     "686973742D6B65792D31": "[history key]"}
    assert credentials_of("x", None, None) == {}


def test_the_settings_credentials_cover_the_embedders_own_url_and_key(monkeypatch) -> None:
    from chatmem.config.sections import EmbeddingsSection
    from chatmem.config.settings import Settings
    from chatmem.providers import secrets_of

    monkeypatch.setenv("EMBED_KEY_钥", "sk-embed-778899")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-chat-112233")
    settings = Settings(embeddings=EmbeddingsSection(
        provider="openai", model="e", base_url="https://u:EMBEDPW-42@host/v1?api-key=EQ-123456",
        api_key_env="EMBED_KEY_钥"))
    found = settings.credentials()
    assert {"sk-chat-112233", "sk-embed-778899", "EMBEDPW-42", "EQ-123456"} <= set(found)
    masked = SecretMask(secrets_of(settings)).mask("echo EMBEDPW-42 EQ-123456 sk-embed-778899")
    assert masked == "echo [api key] [api key] [api key]"
    # A chat key that is no header value leaves the rest to mask, and raises nothing.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abcdefghijklmnop\u2019q")
    assert "EMBEDPW-42" in settings.credentials()


def test_a_long_chinese_history_holding_no_key_is_masked_without_a_look_at_each_character(
        ) -> None:
    # A served request masks every message of the history its client sends: one
    # unicodedata.normalize a character a secret made 200 Chinese messages of 1,000
    # characters ~0.7 s of CPU a request (each secret's form looked for in each).
    from tests.growth import best_cpu_seconds

    secrets = credentials_of("sk-live-ABCDEF123456", None, "钥匙+horse/battery=42")
    history = [f"第{n}条：我在环球公司上班，每天早上九点到。\n" * 55 for n in range(200)]
    held = "钥匙＋ｈｏｒｓｅ/battery=\u200b42"
    assert without_credentials(held, secrets) == ("[history key]", ("[history key]",))
    mask = SecretMask(secrets)
    assert best_cpu_seconds(lambda: [without_credentials(m, secrets) for m in history]) < 0.1
    assert best_cpu_seconds(lambda: [mask.mask(m) for m in history]) < 0.1


@pytest.mark.parametrize("between", ["\u200b", "\n", "\u200e\x00"])
def test_a_stream_of_what_shows_nothing_after_a_key_s_start_is_masked_in_linear_time(
        between: str) -> None:
    # A hostile server's reply: the key's first characters, then a piece a character of
    # what a key is read through, for ever. Each piece read the whole held text again:
    # 8,000 zero-width spaces after "sk-" took 10 s of CPU, 50,000 minutes.
    from tests.growth import assert_linear

    def streamed(text: str) -> str:
        mask = SecretMask(SECRETS)
        return "".join([mask.feed(c) for c in text] + [mask.flush()])

    def reply(size: int) -> str:
        return "好 sk-li" + between * (size // len(between)) + "ve-ABCDEF123456 后" + \
            "sk-" + between * (size // len(between)) + "x 钥" + between * 8

    assert streamed(reply(50)) == SecretMask(SECRETS).mask(reply(50))
    assert streamed(reply(50)).startswith("好 [api key] 后sk-")
    assert_linear(streamed, reply, 2000, between)


def test_a_text_echoing_a_key_many_times_is_masked_in_linear_time() -> None:
    # A hostile server's reply, not plain ASCII, the key in it tens of thousands of times:
    # each place masked copied the whole text (40,000 in 1 MB: 9 s).
    from tests.growth import assert_linear

    def echoed(size: int) -> str:
        return "好sk-live-\u200bABCDEF123456" * size

    assert without_credentials(echoed(2), SECRETS) == ("好[api key]" * 2, ("[api key]",))
    assert_linear(lambda text: without_credentials(text, SECRETS), echoed, 5000)


@pytest.mark.parametrize("before", [b"", b":", b"x:", b"user:", b"apikey:"])
@pytest.mark.parametrize("after", [b"", b":", b"\n"])
def test_a_key_inside_a_basic_header_is_masked_whatever_comes_around_it(
        before: bytes, after: bytes) -> None:
    # `curl -u user:KEY` (or `:KEY`, `KEY:`) sends the key base64-encoded after (or before)
    # other bytes: only the key's base64 alone was masked, so a header pasted into a chat,
    # an import or an echoing server's reply kept the key, two decodes away.
    import base64

    key, history_key = "sk-proj-Ab3dEf6hIj9kLmN0pQrStUvWxYz", "马 horse battery 42"
    secrets = credentials_of(key, None, history_key)
    for secret, label in ((key, "[api key]"), (history_key, "[history key]")):
        header = base64.b64encode(before + secret.encode() + after).decode()
        masked, found = without_credentials(f"Authorization: Basic {header}\n", secrets)
        assert found == (label,)
        shown = masked.removeprefix("Authorization: Basic ").split(label)
        assert len(shown) == 2 and all(len(side) <= 12 for side in shown), masked
        assert SecretMask(secrets).mask(f"Authorization: Basic {header}\n") == masked


def test_a_short_key_s_base64_pieces_mask_nothing_else() -> None:
    secrets = credentials_of("sk-12345", None, "test")
    assert without_credentials("Rlc3 dGVz 0ZXN0 AHRl", secrets) == ("Rlc3 dGVz 0ZXN0 AHRl", ())


_KEY = "sk-proj-Ab3dEf6hIj9kLmN0pQrStUvWxYz"
_HISTORY_KEY = "马 horse battery 42"


@pytest.mark.parametrize(("shown", "label"), [
    # As a model reformats a key it is told to hide, or a log or a library writes it.
    (" ".join(_KEY[at:at + 4] for at in range(0, len(_KEY), 4)), "[api key]"),
    (" ".join(_KEY), "[api key]"), (f"{_KEY[:10]}\t{_KEY[10:]}", "[api key]"),
    (f"{_KEY[:8]}\u00a0{_KEY[8:]}", "[api key]"), (f"{_KEY[:8]}\u3000{_KEY[8:]}", "[api key]"),
    ("".join(c if c.isalnum() else f"%{ord(c):02x}" for c in _KEY), "[api key]"),
    (_KEY.encode().hex(), "[api key]"), (_KEY.encode().hex().upper(), "[api key]"),
    (" ".join(f"{b:02x}" for b in _KEY.encode()), "[api key]"),
    ("".join(c + "\u0336" for c in _KEY), "[api key]"),
    ("".join(c + "\u0301\u0323" for c in _KEY), "[api key]"),
    ("%e9%a9%ac%20horse%20battery%2042", "[history key]"),
    ("%E9%A9%AC+horse+battery+42", "[history key]"),
    (_HISTORY_KEY.encode().hex(), "[history key]"),
])
def test_a_key_reformatted_is_masked_whole(shown: str, label: str) -> None:
    secrets = credentials_of(_KEY, None, _HISTORY_KEY)
    marks = shown[len(shown.rstrip("\u0336\u0301\u0323")):]  # (the last letter's stay)
    assert without_credentials(f"前 {shown} 后", secrets) == (f"前 {label}{marks} 后", (label,))
    mask = SecretMask(secrets)
    streamed = "".join([mask.feed(shown[at:at + 3]) for at in range(0, len(shown), 3)])
    assert streamed + mask.flush() == label + marks


@pytest.mark.parametrize(("history_key", "text"), [
    # A passphrase's letters run on over spaces in ordinary text: read with its spaces.
    ("test", "a best estimate"), ("mydogisthebest", "my dog is the best"),
    ("thankyousomuch2", "thank you so much 2 days"), ("correcthorse", "correct horse"),
    ("钥匙2024春天", "钥匙 2024 春天"),
])
def test_a_short_or_worded_key_is_not_read_through_spaces(history_key: str,
                                                           text: str) -> None:
    secrets = credentials_of(None, None, history_key)
    assert without_credentials(text, secrets) == (text, ())
    assert SecretMask(secrets).mask(text) == text
