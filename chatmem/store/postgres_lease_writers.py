"""p031: an index lease says who wrote it, and a reader honours only one it trusts.

A session's lease (`index_leases`, p005) tells every chat in it that a background
`chatmem index` embeds its backlog, and the chat leaves those messages to it (memory.
vector_backlog, app.indexing). A write share's grantee's `chatmem index` (started for him
when he opens the owner's session with a backlog) takes the lease of her session, and her
chat then left her new messages to him; but p027 has her read no vector he writes of her
messages (`trusted_entry`): her recall by meaning lacked them while his index ran, and she
embedded them all again after. By plain SQL he renewed a lease every minute, and her chat
never embedded any (a lease over LEASE_SECONDS was already not honoured).

So the server stamps each lease inserted or renewed with the role that did it (p023's
chatmem_stamp_writer; no column privilege is granted), and a reader honours a lease only as
it trusts that role's vectors of the session: its own, the session's owner's, or one stored
before p031 (`trusted_by_reader`). Her chat and her `chatmem index` take his lease over;
his honours hers. Rows already stored are left as they are.
"""

from __future__ import annotations

from chatmem.store.postgres_write_shares import Execute, _run_in_schema
from chatmem.store.postgres_writers import writer_statements

LEASES = ("index_leases",)


def lease_writers(execute: Execute) -> None:
    _run_in_schema(execute, lambda _schema: writer_statements(LEASES))
