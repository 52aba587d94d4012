"""Secrets kept out of what chatmem prints and stores.

People paste API keys into base URLs (`https://user:KEY@host/v1`,
`?api-key=KEY`); errors, `config show` and stored turns show the URL with
those parts replaced by ***.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit, urlunsplit

from chatmem.privacy.key_reading import Readings, folded, folded_with_places, key_of, replaced


def url_secrets(url: str) -> list[str]:
    """The password and query values of a URL: where people paste a key."""
    parts = urlsplit(url)
    found = [parts.password] if parts.password else [parts.username] if parts.username else []
    return found + [value for _, value in parse_qsl(parts.query) if value]


def redacted_url(url: str) -> str:
    """`url` with a password and query values replaced by ***: safe to print and store."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "the configured base_url"
    netloc = parts.netloc
    if parts.password:
        netloc = netloc.replace(f":{parts.password}@", ":***@")
    elif parts.username and "@" in netloc:
        # A key pasted as the user name: user@host.
        netloc = "***@" + netloc.split("@", 1)[1]
    query = "&".join(f"{pair.split('=', 1)[0]}=***" if "=" in pair else pair
                     for pair in parts.query.split("&")) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


class Credential(StrEnum):
    """A credential chatmem runs with, as the label that takes its place in text: what a
    notice names (render words each), compared as the label it is."""

    API_KEY = "[api key]"
    HISTORY_KEY = "[history key]"


MIN_SECRET_CHARACTERS = 4
"""A shorter "secret" (a placeholder key like `x`) would mask ordinary words."""


def credentials_of(api_key: str | None, base_url: str | None,
                   history_key: str | None) -> dict[str, Credential]:
    """Each secret a reply must never repeat, with the label shown in its place: the API key
    (unless a placeholder, `placeholder_key`), a key pasted into the base URL (also as the
    Basic auth header carries it), CHATMEM_KEY; both keys in their encoded forms too
    (`_forms_of`)."""
    import base64

    found: dict[str, Credential] = {}
    if base_url:
        parts = urlsplit(base_url)
        if parts.username and parts.password:
            pair = f"{parts.username}:{parts.password}".encode()
            found[base64.b64encode(pair).decode()] = Credential.API_KEY
        for secret in url_secrets(base_url):
            found[secret] = Credential.API_KEY
    if api_key and not placeholder_key(api_key):
        found |= dict.fromkeys(_forms_of(api_key), Credential.API_KEY)
    if history_key:
        found |= dict.fromkeys(_forms_of(history_key), Credential.HISTORY_KEY)
    return {s: label for s, label in found.items() if len(s) >= MIN_SECRET_CHARACTERS}


def placeholder_key(api_key: str) -> bool:
    """Whether an API key is a word a local server takes in place of one (`ollama`, `EMPTY`,
    `dummy`, `none`): letters alone, shorter than any provider's key. It opens nothing, and
    masked it turned the model's own words into `[api key]` ("Run `[api key] pull llama3`",
    "[api key] of these"), stored so and sent back as memory. A short key with a digit or a
    sign (LiteLLM's `sk-1234`) may be a real one and is masked. Never the history key: a
    short passphrase is still one."""
    return len(api_key) < TYPED_MIN_CHARACTERS and api_key.isalpha()


def _forms_of(key: str) -> list[str]:
    """`key` and, unless a placeholder (whose base64 is no secret either), the forms a
    server may quote it back in or a user may paste it in: its bytes base64-encoded (a
    Basic header), percent-encoded as a URL's query carries it (`keyurl=sk%2Dtest%2B…`,
    `sk%2dtest`, a space as `+` too), and in hex."""
    import base64

    if len(key) < MIN_SECRET_CHARACTERS:
        return [key]
    try:
        key.encode()
    except UnicodeEncodeError:  # bytes no UTF-8 reads (an environment's): refused where used
        return [key]
    every = "".join(c if c.isascii() and c.isalnum() else
                    "".join(f"%{b:02X}" for b in c.encode()) for c in key)
    encoded = [quote(key, safe=""), every, quote_plus(key, safe="")]
    # A client library may write the escapes in lowercase (`sk%2dtest`), a form a space as
    # `+`; a dump or a debug log the bytes in hex (a short key's hex could be a number).
    encoded += [_ESCAPE.sub(lambda m: m.group().lower(), form) for form in encoded]
    if len(key) >= TYPED_MIN_CHARACTERS:
        encoded += [key.encode().hex(), key.encode().hex().upper()]
    return list(dict.fromkeys([key, base64.b64encode(key.encode()).decode(),
                               *_base64_cores(key.encode()), *encoded]))


_ESCAPE = re.compile(r"%[0-9A-F]{2}")


def _base64_cores(raw: bytes) -> list[str]:
    """The base64 characters that write `raw` whatever bytes are encoded before and after
    it: a Basic header carries a key after a user name and a colon (`curl -u user:KEY`,
    `:KEY`) or before one (`-u KEY:`), and its base64 alone is in none of them. One for
    each of the three places in a group of three bytes `raw` can start at; the characters
    that hold bits of a byte around it left out."""
    import base64

    cores = []
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + raw).decode()
        cores.append(encoded[-(-8 * offset // 6):8 * (offset + len(raw)) // 6])
    # (a short key's are a few letters text may hold: its own forms cover it)
    return [core for core in cores if len(core) >= TYPED_MIN_CHARACTERS]


TYPED_MIN_CHARACTERS = 8
"""A shorter key is a placeholder a local server takes (`ollama`, `EMPTY`, `dummy`), not a
credential pasted by mistake: masked in what the user types, it would change their words."""


def without_credentials(text: str, secrets: Mapping[str, str]) -> tuple[str, tuple[str, ...]]:
    """`text` with each of `secrets` (secret → label) replaced by its label, also as it is
    written otherwise (`folded_with_places`), and the labels put in (each once, longest
    secret's first)."""
    labels: list[str] = []
    readable = Readings(text)
    for secret, label in sorted(secrets.items(), key=lambda item: -len(item[0])):
        spaceless, key = key_of(secret)
        if not key or key not in readable[spaceless]:  # most texts hold none: no places
            continue
        text, found = replaced(text, secret, label)
        if found and label not in labels:
            labels.append(label)
    return text, tuple(labels)


class TypedMask:
    """Masks the credentials `secrets` name (secret → Credential, as providers.typed_secrets
    gives them) in each text it is called on, and collects which it found: the one place a
    turn's input, an imported transcript and a served request are masked and told."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        self.secrets = secrets
        self._found: dict[Credential, None] = {}

    def __call__(self, text: str) -> str:
        text, found = without_credentials(text, self.secrets)
        self._found.update(dict.fromkeys(Credential(label) for label in found))
        return text

    def optional(self, text: str | None) -> str | None:
        return None if text is None else self(text)

    @property
    def found(self) -> tuple[Credential, ...]:
        """What was masked, in the order first found (longest secret's first in a text)."""
        return tuple(self._found)


ENVIRONMENT_CREDENTIALS = (("OPENAI_API_KEY", "CHATMEM_KEY"),
                           ("OPENAI_BASE_URL", "CHATMEM_BASE_URL"))
"""Where chatmem reads an API key and the history key, and a base URL, unless a config file
says otherwise (Settings.api_key_env's default, config.keys.KEY_ENV, config.loader's
ENV_KEYS)."""


def environment_secrets() -> dict[str, Credential]:
    """The credentials the environment holds where chatmem reads them by default: what to
    mask in what plugin code says where no settings are at hand (its register, a strategy's
    __init__ or build)."""
    import os

    (api_key, history_key), urls = ENVIRONMENT_CREDENTIALS
    found: dict[str, Credential] = {}
    for url in urls:
        found |= credentials_of(None, os.environ.get(url), None)
    return found | credentials_of(os.environ.get(api_key, "").strip() or None, None,
                                  os.environ.get(history_key))


def plugin_mask(secrets: Mapping[str, str] | None = None) -> SecretMask:
    """What masks the text plugin code gives (its errors, replies, model names): `secrets`
    (the settings' credentials) and the environment's, since a plugin may read a key where
    chatmem reads one by default rather than ask the settings."""
    return SecretMask({**environment_secrets(), **(secrets or {})})


class SecretMask:
    """Replaces secrets in text, also in a stream of pieces that may split one.

    `feed` holds back the end of what it was given while it could still be the
    start of a secret, so no piece it returns ever holds part of one; `flush`
    returns what is held at the end.
    """

    def __init__(self, secrets: Mapping[str, str]) -> None:
        # Longest first: a secret that contains another is replaced whole.
        self._secrets = sorted(secrets.items(), key=lambda item: -len(item[0]))
        self._forms = [key_of(secret) for secret, _ in self._secrets]
        # What is held back is read without spaces whatever the key: a key read with them
        # (shorter than SPACED_MIN) begins where its spaceless form does, so the end held
        # for it is held for either reading.
        self._keys = [held for _, key in self._forms if (held := folded(key, True))]
        self._held = ""
        # What is held as `folded_with_places` reads it, kept: the held text may be long
        # (what shows nothing after the start of a key: a zero-width space a piece, from a
        # hostile server), its folded form never longer than a key. Read again at each
        # piece, 8,000 such pieces took 10 s of CPU, 50,000 minutes, the reply held.
        self._held_folded = ""
        self._held_places: list[int] = []

    def mask(self, text: str) -> str:
        readable = Readings(text)
        for (secret, label), (spaceless, key) in zip(self._secrets, self._forms, strict=True):
            if key and key in readable[spaceless]:  # (without_credentials: most hold none)
                text, _ = replaced(text, secret, label)
        return text

    def feed(self, piece: str) -> str:
        shown, added = folded_with_places(piece, True)
        text, folded = self._held + piece, self._held_folded + shown
        if any(key in folded for key in self._keys):  # (once a secret: its text read anew)
            text = self.mask(text)
            folded, places = folded_with_places(text, True)
        else:
            offset = len(self._held)
            places = self._held_places + [offset + at for at in added]
        longest = self._partial_end(folded)
        keep = len(text) - places[len(folded) - longest] if longest else 0
        self._held = text[len(text) - keep:] if keep else ""
        self._held_folded = folded[len(folded) - longest:] if longest else ""
        self._held_places = [at - (len(text) - keep) for at in places[len(folded) - longest:]] \
            if longest else []
        return text[:len(text) - keep]

    def flush(self) -> str:
        held, self._held, self._held_folded, self._held_places = self._held, "", "", []
        return held

    def _partial_end(self, folded: str) -> int:
        """The length of the longest end of `folded` (a text as `mask` reads it) that
        begins some secret: what is held is the text from its first character on (with
        what follows it: a zero-width space or a line break may go on into the secret)."""
        longest = 0
        for key in self._keys:  # (each place its first character stands, longest first:
            # an endswith a length made a reply streamed 20 characters a piece take 4 s a
            # megabyte, keys as long as a key's hex 7 s)
            size = min(len(key) - 1, len(folded))
            tail = folded[len(folded) - size:]
            at = tail.find(key[0])
            while 0 <= at < size - longest:
                if key.startswith(tail[at:]):
                    longest = size - at
                    break
                at = tail.find(key[0], at + 1)
        return longest
