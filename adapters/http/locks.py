"""One proxied request at a time per session while it reads and writes the session.

A request compares the client's history with the stored one, then appends what is new; a
second request on the same session in between (a retry, a second worker) would append the
same messages again. The proxy holds this lock around "compare, append, prepare" and again
around "record the reply", never while the upstream answers. Its keys are apart from the
compaction locks' (`abridged.adapters.postgres_locks`), which `prepare_request` takes inside.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from uuid import UUID

from abridged.application.locks import CompactionLocks, ProcessLocks

KEY_NAMESPACE = b"abridged.serve.request:"


def _request_key(session_id: UUID) -> int:
    digest = hashlib.sha256(KEY_NAMESPACE + session_id.bytes).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class RequestLocks:
    """Per-session request locks: among this process's threads, and with PostgreSQL among
    every process using the database (advisory locks on a small connection pool)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._local: CompactionLocks = ProcessLocks()
        self._pool = None
        if "POSTGRES_DBNAME" in env:
            from psycopg.conninfo import make_conninfo
            from psycopg_pool import ConnectionPool

            conninfo = make_conninfo(
                dbname=env["POSTGRES_DBNAME"],
                host=env.get("POSTGRES_HOST", "localhost"),
                port=env.get("POSTGRES_PORT", "5432"),
                user=env.get("POSTGRES_USER", ""),
                password=env.get("POSTGRES_PASSWORD", ""),
            )
            # A held lock keeps its connection; requests on other sessions take others.
            self._pool = ConnectionPool(
                conninfo, min_size=1, max_size=32, kwargs={"autocommit": True}, open=True
            )

    @contextmanager
    def held(self, session_id: UUID) -> Iterator[None]:
        """Holds the session's request lock for the block."""
        local = self._local.acquire(session_id)
        try:
            if self._pool is None:
                yield
                return
            key = _request_key(session_id)
            with self._pool.connection() as connection:
                connection.execute("SELECT pg_advisory_lock(%s)", (key,))
                try:
                    yield
                finally:
                    connection.execute("SELECT pg_advisory_unlock(%s)", (key,))
        finally:
            local.release()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
