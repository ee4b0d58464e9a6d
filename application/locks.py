"""One compaction at a time per session: the lock a compaction holds while it runs.

A request that needs a compaction takes the session's compaction lock, then reads the session
again: when another compaction finished while it waited, it finds the session already
compacted and reuses that result instead of calling the summarizer a second time. Appends and
requests that need no compaction never take the lock.

`ProcessLocks` serializes the threads (and asyncio tasks) of one process; a store shared by
several processes adds its own lock (PostgreSQL: `abridged.adapters.postgres_locks`). Between
processes on SQLite, the store's optimistic concurrency still keeps one compaction per
version: a loser re-reads and re-decides (`ConcurrentWriteError` after repeated losses).

`CommandLocks` is the other lock a session has in a process: every command holds it from the
session's load to its save, so threads of one process never race each other's writes (only
another process can make a command run again).

A command of `AsyncSessions` whose caller is cancelled stops waiting for either lock
(`abridged.application.cancellation`): a cancelled call never runs later, behind its caller's
back, and never keeps a worker waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, Protocol, TypeVar
from uuid import UUID

from abridged.application.cancellation import acquire_unless_cancelled

__all__ = ["CommandLocks", "CompactionLocks", "HeldLock", "ProcessLocks"]

L = TypeVar("L", threading.Lock, threading.RLock)


class HeldLock(Protocol):
    """A lock that is held; `release` may be called from another thread than the acquirer's,
    once."""

    def release(self) -> None:
        """Lets the next waiter in."""
        ...


class CompactionLocks(Protocol):
    """Per-session compaction locks."""

    def acquire(self, session_id: UUID) -> HeldLock:
        """Waits until no other compaction of the session runs, then holds its lock."""
        ...


class _Held:
    def __init__(self, locks: ProcessLocks, session_id: UUID, lock: threading.Lock) -> None:
        self._locks = locks
        self._session_id = session_id
        self._lock: threading.Lock | None = lock

    def release(self) -> None:
        lock, self._lock = self._lock, None
        if lock is None:
            raise RuntimeError("this compaction lock was already released")
        self._locks.forget(self._session_id, lock)


class _LockTable(Generic[L]):
    """A lock per session, made when a first user comes and dropped when the last one leaves,
    so the table stays as small as what runs or waits."""

    def __init__(self, make: Callable[[], L]) -> None:
        self._make: Callable[[], L] = make
        self._guard = threading.Lock()
        self._locks: dict[UUID, tuple[L, int]] = {}

    def _join(self, session_id: UUID) -> L:
        """The session's lock, counting one more user of it (who then waits for it)."""
        with self._guard:
            lock, users = self._locks.get(session_id) or (self._make(), 0)
            self._locks[session_id] = (lock, users + 1)
        return lock

    def _leave(self, session_id: UUID) -> None:
        """One user fewer: the last one removes the session's lock from the table."""
        with self._guard:
            lock, users = self._locks[session_id]
            if users == 1:
                del self._locks[session_id]
            else:
                self._locks[session_id] = (lock, users - 1)

    def __len__(self) -> int:
        """How many sessions have a lock held or waited for."""
        return len(self._locks)

    def users(self, session_id: UUID) -> int:
        """How many hold or wait for the session's lock."""
        with self._guard:
            return self._locks.get(session_id, (None, 0))[1]

    def _acquire(self, session_id: UUID) -> L:
        """Joins the session's lock and waits for it (unless the caller is cancelled)."""
        lock = self._join(session_id)
        try:
            acquire_unless_cancelled(lock)
        except BaseException:
            self._leave(session_id)
            raise
        return lock


class ProcessLocks(_LockTable[threading.Lock]):
    """A compaction lock per session for the threads of this process."""

    def __init__(self) -> None:
        super().__init__(threading.Lock)

    def acquire(self, session_id: UUID) -> HeldLock:
        """Waits for the session's lock and holds it."""
        return _Held(self, session_id, self._acquire(session_id))

    def forget(self, session_id: UUID, lock: threading.Lock) -> None:
        """Releases `lock` (the session's); the last user removes it from the table."""
        self._leave(session_id)
        lock.release()


class CommandLocks(_LockTable[threading.RLock]):
    """A re-entrant lock per session for the commands of this process: a command holds it
    from the session's load to its save, so two threads' commands on one session run one after
    the other instead of losing a race and running again. A command run inside another on
    the same thread (a nested command) passes."""

    def __init__(self) -> None:
        super().__init__(threading.RLock)

    @contextmanager
    def held(self, session_id: UUID) -> Iterator[None]:
        """Holds the session's command lock for the block."""
        lock = self._acquire(session_id)
        try:
            yield
        finally:
            lock.release()
            self._leave(session_id)
