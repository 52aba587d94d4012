"""Which state owners a write share's grantee keeps apart in another's PostgreSQL session
(store.writer_state): the built-in strategies', every plugin's, never the session's own."""

from __future__ import annotations

from chatmem.memory.pins import COUNTER
from chatmem.memory.sensitive_turns import SENSITIVE_KEY
from chatmem.store.state_coverage import FACTS_OWNER, SPEAKERS_OWNER
from chatmem.store.writer_state import SESSION_STATE, kept_apart, kept_role, per_writer


def test_the_sessions_own_state_is_not_kept_per_writer() -> None:
    assert {SENSITIVE_KEY, SPEAKERS_OWNER} == SESSION_STATE
    assert not any(per_writer(owner) for owner in SESSION_STATE)
    assert all(per_writer(owner) for owner in ("summary", "summary-buffer", COUNTER,
                                               FACTS_OWNER, "notes", "my_plugin"))


def test_a_role_named_with_a_slash_or_in_chinese_keeps_its_own_name() -> None:
    assert kept_role("notes/bob") == ("notes", "bob")
    assert kept_role("summary/x/bob") == ("summary", "x/bob")
    assert kept_role("facts/张三") == ("facts", "张三")
    assert kept_apart("summary/x/bob", "x/bob") and not kept_apart("summary/x/bob", "bob")
    assert kept_role("sensitive/bob") == ("sensitive/bob", "")
    assert kept_role("notes") == ("notes", "")
