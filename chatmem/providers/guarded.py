"""A plugin's provider, its unknown exceptions made chatmem's.

chatmem's own providers raise ProviderError (or a subclass) for every failure it knows how
to word; a plugin's may raise anything its client library does (ConnectionError, an HTTP
library's error, ValueError for a missing key). Wrapped, such an exception becomes
ProviderFailed: the turn is recorded as failed, the chat goes on, a command says one line
naming the provider, as for a model error of chatmem's own. What its code prints meanwhile
goes to stderr (chatmem.plugin_output), as while it loads.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from chatmem.errors import ChatmemError, ProviderFailed, one_line
from chatmem.notices import UsageIgnored
from chatmem.plugin_calls import guarded, kind_of, masked
from chatmem.plugin_output import plugin_prints_to_stderr, printing_to_stderr
from chatmem.providers.base import (
    ChatMessages,
    Provider,
    Purpose,
    ReplyStream,
    Usage,
    checked_counts,
    not_a_count,
)
from chatmem.tokens import token_count

if TYPE_CHECKING:
    from chatmem.privacy.secrets import SecretMask
    from chatmem.tokens import TokenCounter


class GuardedProvider:
    """`inner`, whose exceptions other than chatmem's are ProviderFailed, and whatever it
    raises (a ProviderError of its own too, as README recommends) with `mask`'s secrets
    masked (an HTTP library's error may quote the Authorization header);
    `registered`: the name its plugin registered it under (default: its own `name`)."""

    def __init__(self, inner: Provider, mask: SecretMask | None = None,
                 registered: str | None = None) -> None:
        self.inner = inner
        self.mask = mask
        # Failures are named as the user chose the provider, which is also how its plugin
        # is found, whatever the object calls itself.
        self.registered = inner.name if registered is None else registered

    @property
    def name(self) -> str:
        return self.inner.name

    @name.setter
    def name(self, value: str) -> None:
        self.inner.name = value

    @property
    def model(self) -> str:
        return self.inner.model

    @model.setter
    def model(self, value: str) -> None:
        self.inner.model = value

    def wrapped_provider(self) -> Provider:
        return self.inner

    def _failed(self, error: BaseException | str) -> ProviderFailed:
        return failure(self.registered, error, self.mask)

    @property
    def _masking(self) -> Callable[[str], str] | None:
        return None if self.mask is None else self.mask.mask

    def stream(self, messages: ChatMessages) -> ReplyStream:
        with plugin_prints_to_stderr():
            stream = guarded(self._failed, lambda: self.inner.stream(messages), self._masking)
        return GuardedStream(stream, self._failed, self._masking, self.registered)

    def complete(self, messages: ChatMessages, *, purpose: Purpose = Purpose.CHAT) -> str:
        with plugin_prints_to_stderr():
            reply = guarded(self._failed,
                            lambda: self.inner.complete(messages, purpose=purpose),
                            self._masking)
        if not isinstance(reply, str):
            # Else a summary or fact extraction fails on it, blamed on chatmem's strategy.
            raise self._failed(f"its reply is {kind_of(reply)}, not text")
        return reply

    def token_counter(self) -> TokenCounter:
        with plugin_prints_to_stderr():
            counter = guarded(self._failed, self.inner.token_counter, self._masking)
            missing = guarded(self._failed, lambda: lacks_counting(counter), self._masking)
        if missing:
            # Else the engine fails on it much later, reading a None's `key`.
            kind = kind_of(counter)
            raise self._failed(f"its token_counter returned {kind}, not a TokenCounter"
                               if counter is None else
                               f"its token_counter returned {kind}, which has no {missing}")
        return GuardedCounter(counter, self._failed, self._masking)

    def close(self) -> None:
        with plugin_prints_to_stderr():
            guarded(self._failed, lambda: self.inner.close(), self._masking)

    def __getattr__(self, attribute: str) -> Any:
        # What else the plugin's provider offers (its `images` rule, say), as it is.
        return getattr(self.inner, attribute)


class GuardedCounter:
    """A plugin provider's token counter, what its counting prints sent to stderr: it counts
    outside any other plugin call too (a turn's input and reply, a context's total), where
    a debug line broke `ask --json` and ask's reply-only stdout. What it raises, or a count
    that is no int of 0 or more, is `failed` (the provider's): a negative count was blamed
    on the strategy whose context held it."""

    def __init__(self, inner: TokenCounter,
                 failed: Callable[[BaseException | str], ChatmemError],
                 mask: Callable[[str], str] | None = None) -> None:
        self.inner = inner
        self._failed = failed
        self._mask = mask

    @property
    def key(self) -> str:
        return self.inner.key

    @key.setter
    def key(self, value: str) -> None:
        self.inner.key = value

    @property
    def approximate(self) -> bool:
        return self.inner.approximate

    @approximate.setter
    def approximate(self, value: bool) -> None:
        self.inner.approximate = value

    @property
    def priming(self) -> int:
        return self.inner.priming

    @priming.setter
    def priming(self, value: int) -> None:
        self.inner.priming = value

    @property
    def additive(self) -> bool:
        return self.inner.additive

    @additive.setter
    def additive(self, value: bool) -> None:
        self.inner.additive = value

    def count_text(self, text: str) -> int:
        return self._counted("count_text", lambda: self.inner.count_text(text))

    def count_message(self, role: str, content: str) -> int:
        return self._counted("count_message", lambda: self.inner.count_message(role, content))

    def count_messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        # One routing around the whole list: the plugin's loop runs inside it.
        return self._counted("count_messages", lambda: self.inner.count_messages(messages))

    def _counted(self, method: str, count: Callable[[], object]) -> int:
        tokens = guarded(self._failed, lambda: printing_to_stderr(count), self._mask)
        # numpy's integers will do; a bool, a float, a negative or an absurd count will not.
        whole = token_count(tokens)
        if whole is None:
            shown = repr(tokens) if isinstance(tokens, int | float) else kind_of(tokens)
            raise self._failed(f"its token counter's {method} returned {shown},"
                               f" {not_a_count(tokens)}")
        return whole

    def __getattr__(self, attribute: str) -> Any:
        # What else the plugin's counter offers, as it is.
        return getattr(self.inner, attribute)


PROVIDER_METHODS = ("stream", "complete", "token_counter", "close")
"""What a provider does (README, Writing a plugin); chatmem calls each of them."""


def not_a_provider(value: object) -> str | None:
    """What makes `value`, what a plugin's create returned, no provider (said before a turn,
    not as an AttributeError in the middle of one); None when it is one."""
    missing = [method for method in PROVIDER_METHODS if not callable(getattr(value, method, None))]
    if len(missing) == len(PROVIDER_METHODS):
        return f"its create returned {kind_of(value)}, not a provider"
    if missing:
        return f"its provider ({kind_of(value)}) has no {', '.join(missing)} method"
    # A model of None (none configured, `Provider(settings.model)`) ran before it was checked.
    wrong = [why for why in (_not_text(value, "name"), _not_text(value, "model", none_ok=True))
             if why]
    if wrong:
        return f"its provider ({kind_of(value)}) has {' and '.join(wrong)}"
    return None


def _not_text(value: object, attribute: str, *, none_ok: bool = False) -> str | None:
    if not hasattr(value, attribute):
        return f"no {attribute} attribute (text)"
    got = getattr(value, attribute)
    if isinstance(got, str) or (none_ok and got is None):
        return None
    return f"a {attribute} that is {kind_of(got)}, not text" + (" or None" if none_ok else "")


def lacks_counting(counter: object) -> str:
    """What a TokenCounter has that `counter` (a plugin's) lacks, or nothing: `key`, the
    text its counts are cached under, and the three ways chatmem counts."""
    missing = [] if isinstance(getattr(counter, "key", None), str) else ["key (text)"]
    missing += [method for method in ("count_text", "count_message", "count_messages")
                if not callable(getattr(counter, method, None))]
    return ", ".join(missing)


def failure(name: str, error: BaseException | str, mask: SecretMask | None,
            doing: str = "failed") -> ProviderFailed:
    """ProviderFailed for `error`, what it says with `mask`'s secrets masked."""
    if mask is None:
        return ProviderFailed(name, error, doing)
    return ProviderFailed(name, mask.mask(error if isinstance(error, str) else one_line(error)),
                          doing)


class GuardedStream:
    """A reply stream whose iteration and close raise only chatmem's errors."""

    def __init__(self, inner: ReplyStream, failed: Callable[[BaseException | str], ChatmemError],
                 mask: Callable[[str], str] | None = None, provider: str = "") -> None:
        self.inner = inner
        self._failed = failed
        self._mask = mask
        self._provider = provider
        self._usage = Usage()

    @property
    def usage(self) -> Usage:
        # A plugin's stream may have no usage (a bare generator): the provider then
        # reported no counts, as a server that sends none.
        try:
            usage = getattr(self.inner, "usage", None)
        except Exception as e:  # a plugin's attribute may raise anything
            return self._ignored(f"its reply's usage raised {one_line(e)}")
        if usage is None:
            return self._usage
        if not isinstance(usage, Usage):  # README: said in one line, as wrong counts are
            return self._ignored(f"its reply's usage is {kind_of(usage)}, not a Usage")
        counts, wrong = checked_counts(usage)
        if wrong is None:
            return counts
        # Else a text count broke the running total after the turn was stored (the chat
        # ended, its next line lost), and a float or a negative one was shown and stored.
        said = wrong if self._mask is None else self._mask(wrong)
        return Usage(cut_at_limit=usage.cut_at_limit, filtered=usage.filtered,
                     ignored=UsageIgnored(self._provider, said))

    @usage.setter
    def usage(self, value: Usage) -> None:
        self._usage = value
        with contextlib.suppress(Exception):  # a stream that takes no attributes: kept here
            self.inner.usage = value

    def _ignored(self, wrong: str) -> Usage:
        """No counts, with the notice saying why (`wrong`, masked)."""
        said = wrong if self._mask is None else self._mask(wrong)
        return Usage(ignored=UsageIgnored(self._provider, said))

    @property
    def rendered_prompt(self) -> str | None:
        # Read as the reply is stored: a plugin's property that raises lost the paid reply
        # to a traceback (with its message unmasked); the exact input is then not known.
        try:
            rendered = getattr(self.inner, "rendered_prompt", None)
        except Exception:
            return None
        return rendered if isinstance(rendered, str) else None

    @rendered_prompt.setter
    def rendered_prompt(self, value: str | None) -> None:
        self.inner.rendered_prompt = value

    def __iter__(self) -> Iterator[str]:
        with plugin_prints_to_stderr():
            deltas = guarded(self._failed, lambda: iter(self.inner), self._mask)
        said = False
        while True:
            try:
                # Only around the plugin's own step: between pieces chatmem draws the reply
                # on stdout.
                with plugin_prints_to_stderr():
                    delta = next(deltas)
            except StopIteration:
                if not said:
                    # As chatmem's own providers do: an empty reply is a fault, not an answer.
                    raise self._failed("its reply was empty") from None
                return
            except KeyboardInterrupt:
                raise
            except ChatmemError as e:
                # Its own ProviderError (README recommends one) may quote the key too.
                if self._mask is None:
                    raise
                raise masked(e, self._mask) from None
            except BaseException as e:  # a plugin's stream may raise anything (not Ctrl-C)
                raise self._failed(e) from None
            if not isinstance(delta, str):
                # Before anyone shows, stores or forwards it: the turn fails as on a raise.
                raise self._failed(f"a piece of its reply is {kind_of(delta)}, not text")
            said = said or bool(delta)
            yield delta

    def close(self) -> None:
        with plugin_prints_to_stderr():
            guarded(self._failed, lambda: self.inner.close(), self._mask)
