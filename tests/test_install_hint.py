"""Install hints point to the checkout: a different project holds the name chatmem on the
package index, so no hint may install a package by that name from it (issue 21)."""

from __future__ import annotations

import re
from pathlib import Path

import chatmem
from chatmem import install_hint

FROM_THE_INDEX = re.compile(r"pip install '?chatmem\b")


def test_the_hint_installs_an_extra_from_the_checkout() -> None:
    assert install_hint("embed") == "pip install -e '.[embed]' in the chatmem checkout"


def test_no_hint_installs_a_package_named_chatmem_from_the_index() -> None:
    root = Path(chatmem.__file__).parent
    hints = [(path.name, line.strip()) for path in root.rglob("*.py")
             for line in path.read_text(encoding="utf-8").splitlines()
             if FROM_THE_INDEX.search(line)]
    assert hints == []
    assert not FROM_THE_INDEX.search((root.parent / "README.md").read_text(encoding="utf-8"))
