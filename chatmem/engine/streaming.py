"""A turn's reply as its provider streams it. What the provider's code raises that is not
chatmem's (a provider a program hands in through `Workspace.around`, say) becomes
ProviderFailed, as a plugin's does (chatmem.providers.guarded): the turn is recorded as
failed and the front end says one line naming the provider, its secrets masked."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import suppress
from typing import TYPE_CHECKING

from chatmem.errors import ChatmemError, ProviderFailed, one_line
from chatmem.text import valid_text

if TYPE_CHECKING:
    from chatmem.config.settings import Settings
    from chatmem.providers.base import ChatMessages, Provider, ReplyStream


class ProviderCalls:
    """Calls to `provider` for one turn, its unknown exceptions made ProviderFailed."""

    def __init__(self, provider: Provider, settings: Settings | None) -> None:
        self.provider, self.settings = provider, settings

    def mask(self, text: str) -> str:
        """`text` without the settings' secrets or the environment's (looked up only when
        something failed: a turn does not pay for it)."""
        from chatmem.privacy.secrets import plugin_mask
        from chatmem.providers import secrets_of

        settings = self.settings
        return plugin_mask(secrets_of(settings) if settings is not None else None).mask(text)

    def failed(self, error: BaseException) -> ProviderFailed:
        return ProviderFailed(self.provider.name, self.mask(one_line(error)))

    def stream(self, messages: ChatMessages) -> ReplyStream:
        try:
            return self.provider.stream(messages)
        except (ChatmemError, KeyboardInterrupt):
            raise
        except BaseException as e:  # not Ctrl-C (raised above): CancelledError too
            # Not chained: the original's text is not masked, and a traceback shows it.
            raise self.failed(e) from None

    def deltas(self, stream: ReplyStream) -> Iterator[str]:
        """`stream`'s pieces, each valid text (a lone surrogate, a provider's broken pair,
        cannot be drawn or stored)."""
        try:
            pieces = iter(stream)
        except (ChatmemError, KeyboardInterrupt):
            raise
        except BaseException as e:  # not Ctrl-C: raised above
            raise self.failed(e) from None
        while True:
            try:
                delta = valid_text(next(pieces))
            except StopIteration:
                return
            except (ChatmemError, KeyboardInterrupt):
                raise
            except BaseException as e:  # not Ctrl-C: raised above
                raise self.failed(e) from None
            yield delta


def close_quietly(stream: ReplyStream | None) -> None:
    """Close a reply the turn stops reading early (the model stops sending, and stops being
    paid for); what closing raises is not what the caller hears: the error on its way out
    (or the Ctrl-C) says more."""
    if stream is not None:
        with suppress(Exception):
            stream.close()


def caller_failure(error: BaseException, mask: Callable[[str], str]) -> str:
    """What a failed turn's row says when the caller's own code (`on_delta`,
    `on_reply_end`) raised while the reply came."""
    return mask(f"the program receiving the reply failed: {one_line(error)}")
