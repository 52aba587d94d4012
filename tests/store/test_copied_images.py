"""Images go with their session when it is copied (to a file and back, on every backend)
or forked: each is kept once per session by hash, and a copy's turns name them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from documents import png

from chatmem.attachments import Attachment
from chatmem.engine import Engine
from chatmem.images import ImageData, ImageRule, read_image
from chatmem.providers.base import ChatMessages
from chatmem.providers.scripted import ScriptedProvider, ScriptedReply
from chatmem.store import Store
from chatmem.store.copying import copy_sessions


class SeeingProvider(ScriptedProvider):
    """The offline model, declaring that it sees images as OpenAI counts them: it reads a
    message's text parts (an image part is what the endpoint would look at)."""

    images = ImageRule.OPENAI_TILES

    def stream(self, messages: ChatMessages) -> ScriptedReply:
        return super().stream([{**m, "content": _text(m["content"])} for m in messages])


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    assert isinstance(content, list)
    return " ".join(part["text"] for part in content if part.get("type") == "text")


def image(width: int, height: int) -> ImageData:
    read = read_image(png(width, height))
    assert read is not None
    return read


def kept(store: Store, name: str) -> dict[str, tuple[str, int, int, bytes | None]]:
    session = store.sessions.session(name).id
    return {i.digest: (i.mime, i.width, i.height, store.images.image_bytes(session, i.digest))
            for i in store.images.images(session)}


def talk_with_images(make_engine: Callable[..., Engine]) -> tuple[ImageData, ImageData]:
    red, wide = image(30, 20), image(64, 16)
    engine = make_engine("window", name="照片", provider=SeeingProvider(), k=4)
    engine.run_turn("what is this?", attachments=[Attachment("红.png", "a red image", red)])
    engine.run_turn("and again", attachments=[Attachment("红.png", "a red image", red)])
    engine.run_turn("next one", attachments=[Attachment("wide.png", "a wide image", wide)])
    return red, wide


def test_a_copy_carries_the_sessions_images_there_and_back(
        store: Store, make_engine: Callable[..., Engine], tmp_path: Path) -> None:
    red, wide = talk_with_images(make_engine)
    before = kept(store, "照片")
    assert {d: b[3] for d, b in before.items()} == {red.digest: red.data, wide.digest: wide.data}
    with Store(tmp_path / "copy.db") as copy:
        report = copy_sessions(store, copy)
        assert report.rows["images"] == 2
        assert kept(copy, "照片") == before
        store.sessions.rename_session("照片", "原来")
        copy_sessions(copy, store)
    assert kept(store, "照片") == kept(store, "原来") == before


def test_a_fork_carries_the_images_its_turns_sent(
        store: Store, make_engine: Callable[..., Engine]) -> None:
    red, _ = talk_with_images(make_engine)
    store.forks.fork_session("照片", "all")
    store.forks.fork_session("照片", "two", at_turn=2)
    store.forks.fork_session("照片", "none", at_turn=0)
    assert kept(store, "all") == kept(store, "照片")
    assert {d: b[3] for d, b in kept(store, "two").items()} == {red.digest: red.data}
    assert kept(store, "none") == {}
