"""Compaction locks across processes sharing a PostgreSQL store: advisory locks.

A compaction holds `pg_advisory_lock(key)` on a connection of its own for as long as it runs
(the summary included), with the key derived from the session id; a process that dies loses
its connection and so its locks, so a crash never leaves a session locked. Within one process
the threads first queue on a process-local lock, so a process holds at most one connection
per session being compacted. A waiting `AsyncSessions` call that is cancelled stops waiting at
once (the server cancels its `pg_advisory_lock`), like one waiting for a thread of its own
process (`abridged.application.cancellation`).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from collections.abc import Mapping
from uuid import UUID

import psycopg
from psycopg.conninfo import make_conninfo

from abridged.application.cancellation import current_scope
from abridged.application.locks import HeldLock, ProcessLocks
from abridged.domain.errors import StoreError

__all__ = ["AdvisoryLocks", "advisory_key"]

logger = logging.getLogger(__name__)

KEY_NAMESPACE = b"abridged.compaction:"
"""Keeps these keys apart from advisory locks the host takes on the same database."""


def advisory_key(session_id: UUID) -> int:
    """The signed 64-bit advisory-lock key of a session's compactions."""
    digest = hashlib.sha256(KEY_NAMESPACE + session_id.bytes).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class _Held:
    def __init__(
        self, local: HeldLock, connection: psycopg.Connection[tuple[object, ...]], key: int
    ) -> None:
        self._local = local
        self._connection = connection
        self._key = key

    def release(self) -> None:
        try:
            # Closing the connection releases the lock too; unlocking first tells the server
            # at once, whatever the connection's teardown does. (A cancellation of the wait
            # that came too late may cancel this query instead: the close still releases.)
            with contextlib.suppress(psycopg.errors.QueryCanceled):
                self._connection.execute("SELECT pg_advisory_unlock(%s)", (self._key,))
        except psycopg.OperationalError as error:
            # The server ended the lock's connection (a restart, an administrator): the lock
            # went with it. The compaction's own writes are checked by the store's versions.
            logger.warning("compaction lock %s: its connection was lost (%s)", self._key, error)
        finally:
            self._connection.close()
            self._local.release()


class AdvisoryLocks:
    """`CompactionLocks` for processes sharing a PostgreSQL database (the `POSTGRES_*`
    settings of `abridged.adapters.bootstrap.persistence_env`)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        given = {
            "dbname": env["POSTGRES_DBNAME"],
            "host": env.get("POSTGRES_HOST", ""),
            "port": env.get("POSTGRES_PORT", ""),
            "user": env.get("POSTGRES_USER", ""),
            "password": env.get("POSTGRES_PASSWORD", ""),
        }
        # What is not given is left to libpq's defaults (PGHOST, ..., ~/.pgpass).
        self._conninfo = make_conninfo(**{key: value for key, value in given.items() if value})
        self._local = ProcessLocks()

    def acquire(self, session_id: UUID) -> HeldLock:
        """Waits for this process's threads, then for other processes, and holds the lock."""
        local = self._local.acquire(session_id)
        try:
            connection = psycopg.connect(self._conninfo, autocommit=True)
        except BaseException as error:
            local.release()
            if isinstance(error, psycopg.OperationalError):
                raise StoreError(f"the session store failed: {error}") from error
            raise
        key = advisory_key(session_id)
        try:
            self._wait(connection, key)
        except BaseException as error:
            connection.close()
            local.release()
            if isinstance(error, psycopg.OperationalError):  # the server ended the wait
                raise StoreError(f"the session store failed: {error}") from error
            raise
        return _Held(local, connection, key)

    def users(self, session_id: UUID) -> int:
        """How many threads of this process hold or wait for the session's lock."""
        return self._local.users(session_id)

    @staticmethod
    def _wait(connection: psycopg.Connection[tuple[object, ...]], key: int) -> None:
        """Waits for another process's compaction of the session; an `AsyncSessions` call
        cancelled meanwhile has the server cancel the wait (`CommandCancelled`)."""
        scope = current_scope()
        if scope is None:
            connection.execute("SELECT pg_advisory_lock(%s)", (key,))
            return

        def cancel() -> None:
            # Asking the server to cancel opens a connection: not on the event loop.
            threading.Thread(target=connection.cancel_safe, daemon=True).start()

        with scope.calling(cancel):
            try:
                connection.execute("SELECT pg_advisory_lock(%s)", (key,))
            except psycopg.errors.QueryCanceled:
                scope.check()
                raise
