"""Images kept by content hash, once per session, on every backend (issue 30, finding 8)."""

from __future__ import annotations

from documents import png

from chatmem.images import read_image
from chatmem.store import Store


def test_an_image_is_kept_once_per_session_and_goes_with_its_session(store: Store) -> None:
    image = read_image(png(30, 20))
    other = read_image(png(20, 30))
    assert image is not None and other is not None
    first = store.sessions.create_session("a", strategy="window").id
    second = store.sessions.create_session("b", strategy="window").id
    store.images.keep_images(first, [image])
    store.images.keep_images(first, [image, other])  # sent again with a turn: nothing new
    store.images.keep_images(second, [image])
    kept = store.images.images(first)
    assert sorted((k.width, k.height) for k in kept) == [(20, 30), (30, 20)]
    assert {k.digest for k in kept} == {image.digest, other.digest}
    assert store.images.image_bytes(first, image.digest) == image.data
    assert [k.size for k in store.images.images(second)] == [len(image.data)]
    store.sessions.delete_session("b")
    assert store.images.images(second) == []
    assert len(store.images.images(first)) == 2
