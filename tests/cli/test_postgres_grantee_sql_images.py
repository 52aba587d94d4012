"""An image a write share's grantee puts by plain SQL under the hash of the owner's image
(PostgreSQL): her session keeps an image by the sha256 of its bytes, and bytes that are not
that hash's are no image of hers: never shown by `inspect` as what she sent, nor resent."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cli_runner import invoke, run
from documents import png
from grantees import sql_as
from pg import NOW, Team

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")


def sent_images(shown: dict[str, Any]) -> list[bytes]:
    prefix = "data:image/png;base64,"
    return [base64.b64decode(part["image_url"]["url"].removeprefix(prefix))
            for m in shown["messages"] if isinstance(m["content"], list)
            for part in m["content"] if part["type"] == "image_url"]


@pytest.mark.parametrize("question", ["what colour is it?", "这是什么颜色？"])
def test_an_image_a_grantee_swaps_under_her_hash_is_not_hers(
        team: Team, chat_server: Any, tmp_path: Path, question: str) -> None:
    ann, bob = team.url("ann"), team.url("bob")
    photo = tmp_path / "red.png"
    photo.write_bytes(png(64, 48))
    env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-test-key-1234"}
    assert invoke("ask", "proj", "-m", "vision", "-a", str(photo), question, "--db", ann,
                  env=env).exit_code == 0
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    shown = json.loads(run(ann, "inspect", "proj", "1", "--json", code=0).stdout)
    assert sent_images(shown) == [photo.read_bytes()]
    (session_id, digest), = team.rows("SELECT session_id, digest FROM images")
    his = png(8, 8)
    swap = ("INSERT INTO images (session_id, digest, mime, width, height, data, created_at)"
            " VALUES (%s, %s, 'image/png', 64, 48, %s, %s)")
    # Since p028 he deletes none of her images, nor puts his under her hash ...
    assert sql_as(bob, "DELETE FROM images WHERE session_id = %s", [session_id]) == 0
    assert sql_as(bob, swap, [session_id, digest, his, NOW]) == "23505"
    assert sent_images(json.loads(run(ann, "inspect", "proj", "1", "--json",
                                      code=0).stdout)) == [photo.read_bytes()]
    # ... but one he swapped before it (as he could) is still no image of hers.
    with team.admin() as conn:
        conn.execute("DELETE FROM images WHERE session_id = %s", [session_id])
        conn.execute(swap, [session_id, digest, his, NOW])
    shown = json.loads(run(ann, "inspect", "proj", "1", "--json", code=0).stdout)
    assert his not in sent_images(shown)
