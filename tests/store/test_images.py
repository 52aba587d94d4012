"""Images kept by content hash, once per session, on every backend (issue 30, finding 8)."""

from __future__ import annotations

from documents import png

from chatmem.images import read_image
from chatmem.store import Store


def test_an_image_is_kept_once_per_session_and_goes_with_its_session(store: Store) -> None:
    image = read_image(png(30, 20))
    other = read_image(png(20, 30))
    assert image is not None and other is not None
    first = store.create_session("a", strategy="window").id
    second = store.create_session("b", strategy="window").id
    store.keep_images(first, [image])
    store.keep_images(first, [image, other])  # sent again with a turn: nothing new
    store.keep_images(second, [image])
    kept = store.images(first)
    assert sorted((k.width, k.height) for k in kept) == [(20, 30), (30, 20)]
    assert {k.digest for k in kept} == {image.digest, other.digest}
    assert store.image_bytes(first, image.digest) == image.data
    assert [k.size for k in store.images(second)] == [len(image.data)]
    store.delete_session("b")
    assert store.images(second) == []
    assert len(store.images(first)) == 2
