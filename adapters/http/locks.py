"""One proxied request at a time per session while it reads and writes the session.

A request compares the client's history with the stored one, then appends what is new; a
second request on the same session in between (a retry, a second worker) would append the
same messages again. The proxy holds this lock around "compare, append, prepare" and again
around "record the reply", never while the upstream answers. Its keys are apart from the
compaction locks' (`abridged.adapters.postgres_locks`), which `prepare_request` takes inside.

A PostgreSQL lock is released off the request's path: the request goes on (upstream, or
back to the client) while a small thread pool sends the unlock; the connection returns to
the pool once it is done. When a request of this process is already waiting for the same
session, the lock is handed to it instead, held at the server all along (at most
`HANDOFFS` times in a row, so that the other processes' requests get their turn): the
unlock, the next lock and the wait between them were most of a hot session's time.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import attrs

from abridged.application.locks import CompactionLocks, ProcessLocks

logger = logging.getLogger(__name__)

KEY_NAMESPACE = b"abridged.serve.request:"
UNLOCKING_THREADS = 4
HANDOFFS = 16
"""How many times in a row a session's PostgreSQL lock passes between this process's
requests before it is released for the other processes' (PostgreSQL's locks are not
first-come, first-served: a process handing on without end would keep the others out)."""


@attrs.define
class _Turn:
    """A session's PostgreSQL lock as this process holds it: the connection holding it, and
    how many times in a row it was handed on."""

    waiting: int = 0
    connection: Any = None
    handed: int = 0


def _request_key(session_id: UUID) -> int:
    digest = hashlib.sha256(KEY_NAMESPACE + session_id.bytes).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class RequestLocks:
    """Per-session request locks: among this process's threads, and with PostgreSQL among
    every process using the database (advisory locks on a small connection pool)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._local: CompactionLocks = ProcessLocks()
        self._pool = None
        self._unlocking: ThreadPoolExecutor | None = None
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
            self._unlocking = ThreadPoolExecutor(UNLOCKING_THREADS, "abridged-unlock")
        self._turns: dict[UUID, _Turn] = {}
        self._turns_lock = threading.Lock()

    @contextmanager
    def held(self, session_id: UUID) -> Iterator[None]:
        """Holds the session's request lock for the block."""
        if self._pool is None or self._unlocking is None:
            only_here = self._local.acquire(session_id)
            try:
                yield
            finally:
                only_here.release()
            return
        with self._turns_lock:
            turn = self._turns.setdefault(session_id, _Turn())
            turn.waiting += 1
        local = self._local.acquire(session_id)
        with self._turns_lock:
            turn.waiting -= 1
        key = _request_key(session_id)
        try:
            if turn.connection is None:
                connection = self._pool.getconn()
                try:
                    connection.execute("SELECT pg_advisory_lock(%s)", (key,))
                except BaseException:
                    self._pool.putconn(connection)
                    with self._turns_lock:
                        if turn.waiting == 0:
                            self._turns.pop(session_id, None)
                    raise
                turn.connection, turn.handed = connection, 0
            try:
                yield
            finally:
                with self._turns_lock:
                    handing = turn.waiting > 0 and turn.handed < HANDOFFS
                    if handing:
                        turn.handed += 1
                    else:
                        connection, turn.connection = turn.connection, None
                        if turn.waiting == 0:
                            self._turns.pop(session_id, None)
                if not handing:
                    try:
                        self._unlocking.submit(self._unlock, connection, key)
                    except RuntimeError:  # shutting down: no pool thread takes it any more
                        self._unlock(connection, key)
        finally:
            local.release()

    def _unlock(self, connection: Any, key: int) -> None:
        assert self._pool is not None
        try:
            connection.execute("SELECT pg_advisory_unlock(%s)", (key,))
        except Exception as error:
            # The connection broke: the server released its locks with it.
            logger.warning("a request lock's release failed: %s", error)
        finally:
            self._pool.putconn(connection)

    def close(self) -> None:
        if self._unlocking is not None:
            self._unlocking.shutdown(wait=True)
        if self._pool is not None:
            self._pool.close()
