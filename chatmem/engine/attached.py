"""Files attached to one input, as the messages that carry them: text quoted as data, an
image as an image part beside its description, counted by the endpoint's rule."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from chatmem.errors import UsageError
from chatmem.memory.context import Message
from chatmem.memory.quoting import attached_block
from chatmem.providers.base import Provider, image_rule
from chatmem.text import valid_text
from chatmem.tokens import TokenCounter

if TYPE_CHECKING:
    from chatmem.attachments import Attachment


def refuse_unseen_images(attachments: Sequence[Attachment], provider: Provider) -> None:
    """UsageError (one line, nothing sent) when an image goes to a model that cannot see it."""
    if not any(a.image for a in attachments) or image_rule(provider) is not None:
        return
    for attachment in attachments:
        if attachment.image is not None:
            raise UsageError(
                f"{attachment.name}: the {provider.name} provider ({provider.model}) cannot "
                "see images; nothing was sent (an OpenAI-compatible endpoint with a vision "
                "model can)")


def attached_messages(attachments: Sequence[Attachment], counter: TokenCounter,
                      provider: Provider) -> tuple[Message, ...]:
    """One user message per attachment, before the input; an image's tokens by the
    provider's rule (refuse_unseen_images first)."""
    refuse_unseen_images(attachments, provider)
    # Asked only of an image: a replay's provider opens its model to say (LazyProvider).
    rule = image_rule(provider) if any(a.image for a in attachments) else None
    messages = []
    for attachment in attachments:
        text = attached_block(attachment.name, valid_text(attachment.text))
        if attachment.image is None or rule is None:
            messages.append(Message.counted("user", text, counter))
            continue
        ref = attachment.image.ref(rule)
        messages.append(Message("user", text, counter.count_message("user", text) + ref.tokens,
                                image=ref, image_url=attachment.image.data_url))
    return tuple(messages)
