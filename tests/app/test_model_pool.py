"""The models a server shares are all closed at its end, even when one's close raises."""

from __future__ import annotations

from typing import Any

import pytest

from chatmem.app.model_pool import ModelPool
from chatmem.errors import ProviderError


class Model:
    def __init__(self, closed: list[str], name: str, fails: bool) -> None:
        self.closed, self.name, self.fails = closed, name, fails

    def close(self) -> None:
        self.closed.append(self.name)
        if self.fails:
            raise ProviderError(f"{self.name} could not close")


def test_a_model_whose_close_raises_leaves_none_of_the_others_open() -> None:
    closed: list[str] = []
    pool = ModelPool()
    opened: Any = [Model(closed, "甲", fails=False), Model(closed, "乙", fails=True),
                   Model(closed, "丙", fails=False)]
    for number, model in enumerate(opened):
        pool.get((number,), lambda model=model: model)
    with pytest.raises(ProviderError, match="乙 could not close"):
        pool.close()
    assert closed == ["丙", "乙", "甲"]
