"""`in_batches`: the values of an `IN (…)` list, a statement's worth at a time."""

from chatmem.store.batches import BATCH, in_batches


def test_every_value_once_in_order_with_one_placeholder_each() -> None:
    values = list(range(2 * BATCH + 1))
    batches = list(in_batches(values))
    assert [len(batch) for batch, _ in batches] == [BATCH, BATCH, 1]
    assert [v for batch, _ in batches for v in batch] == values
    assert all(marks.split(", ") == ["?"] * len(batch) for batch, marks in batches)


def test_no_values_no_statement() -> None:
    assert list(in_batches([])) == []
    assert list(in_batches(["杭州"], size=1)) == [(["杭州"], "?")]
