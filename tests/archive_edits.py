"""An `--all` archive copied with one JSON member changed, as an older chatmem or a hand
edit would have written it."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def with_member_changed(archive: Path, to: Path, member: str,
                        change: Callable[[Any], None]) -> Path:
    """`archive` written to `to` with the JSON of `member` (manifest.json, facts.json)
    passed to `change`, which alters it in place."""
    with zipfile.ZipFile(archive) as source, zipfile.ZipFile(to, "w") as out:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == member:
                value = json.loads(data)
                change(value)
                data = json.dumps(value, ensure_ascii=False).encode()
            out.writestr(item, data)
    return to
