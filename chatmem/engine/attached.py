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
    from chatmem.images import ImageRule


def refuse_unseen_images(attachments: Sequence[Attachment], provider: Provider) -> None:
    """UsageError (one line, nothing sent) when an image goes to a model that cannot see it."""
    _image_rule(attachments, provider)


def attached_messages(attachments: Sequence[Attachment], counter: TokenCounter,
                      provider: Provider) -> tuple[Message, ...]:
    """One user message per attachment, before the input; an image's tokens by the
    provider's rule (UsageError when the provider cannot see it)."""
    rule = _image_rule(attachments, provider)
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


def _image_rule(attachments: Sequence[Attachment], provider: Provider) -> ImageRule | None:
    """The provider's image rule when an image is attached, else None; UsageError when the
    provider cannot see it. Asked only of an image: a replay's provider opens its model to
    say (LazyProvider)."""
    image = next((a for a in attachments if a.image is not None), None)
    if image is None:
        return None
    rule = image_rule(provider)
    if rule is None:
        raise UsageError(
            f"{image.name}: the {provider.name} provider ({provider.model}) cannot "
            "see images; nothing was sent (an OpenAI-compatible endpoint with a vision "
            "model can)")
    return rule
