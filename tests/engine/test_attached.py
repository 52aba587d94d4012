"""An attached image as the messages carry it: encoded once, however often it is counted
and sent."""

from __future__ import annotations

import base64

from documents import png

from chatmem.attachments import Attachment
from chatmem.engine.attached import attached_messages
from chatmem.images import ImageRule, read_image
from chatmem.providers.scripted import ScriptedProvider
from chatmem.tokens import counter_for_model


class SeeingProvider(ScriptedProvider):
    """The offline model, declaring that it sees images as OpenAI counts them."""

    images = ImageRule.OPENAI_TILES


def test_an_image_is_encoded_once_for_attach_and_for_the_turn() -> None:
    data = png(1024, 600)
    image = read_image(data)
    assert image is not None
    attachment = Attachment("red.png", "red.png: a PNG image, 1024×600", image)
    counter, provider = counter_for_model("gpt-4o"), SeeingProvider()
    # /attach counts it, the turn sends it (and a retry sends it again).
    [counted] = attached_messages([attachment], counter, provider)
    [sent] = attached_messages([attachment], counter, provider)
    assert sent.image_url is counted.image_url  # once it was base64-encoded per call
    assert sent.image_url is not None
    prefix = "data:image/png;base64,"
    assert sent.image_url.startswith(prefix)
    assert base64.b64decode(sent.image_url[len(prefix):]) == data
    assert sent.image == counted.image and sent.image is not None
    assert sent.image.tokens == 85 + 4 * 170
