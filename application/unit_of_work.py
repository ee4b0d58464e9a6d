"""One command's transaction: load the session, hold its locks, retry on conflict, save.

Every command of the service runs through a `UnitOfWork`: `run(session_id, command)` holds
the session's command lock, loads it (`load`, the cached session itself, see
`abridged.application.loading`), lets the command decide and act, and saves what it recorded
in one transaction. When another process wrote the session in between, the store refuses the
save (`IntegrityError`); the command runs again on the session as it is now, after a short
random pause. A compaction, which may take a summarizer's time, also holds the session's
compaction lock (`compaction_lock`), so one runs at a time per session.

The collaborators that carry out a command (`Compactor`, `lifecycle`, `BackgroundCompactions`,
...) receive a unit of work and the service's ports (`ServicePorts`), never the service.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar, cast
from uuid import UUID

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import (
    ConnectionPoolClosedError,
    EventStore,
    IntegrityError,
    PersistenceError,
)

from abridged.application.cancellation import checkpoint
from abridged.application.loading import SessionLoader
from abridged.application.locks import CommandLocks, CompactionLocks
from abridged.application.ports import ERASED_MARK
from abridged.domain.errors import (
    ConcurrentWriteError,
    ServiceClosedError,
    SessionDeletedError,
    SessionErasedError,
    SessionExistsError,
    StoreError,
    UnknownSessionError,
)
from abridged.domain.events import held_ledgers
from abridged.domain.session import Session

__all__ = ["CONFLICT_PAUSE", "CONFLICT_RETRIES", "UnitOfWork", "store_errors"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

CONFLICT_RETRIES = 8
CONFLICT_PAUSE = 0.005
"""Seconds: the longest pause before the first retry after a conflict; it doubles per try."""


class UnitOfWork:
    """Loads, locks, retries and saves the commands of one service (see the module)."""

    def __init__(
        self,
        loader: SessionLoader,
        save: Callable[[Session], object],
        events: EventStore[UUID],
        locks: CompactionLocks,
        command_locks: CommandLocks | None = None,
        recorders: Sequence[object] = (),
    ) -> None:
        self.loader = loader
        self._save = save
        self._events = events
        self.locks = locks
        self.command_locks = command_locks if command_locks is not None else CommandLocks()
        self.recorders = tuple(recorders)
        """The store's recorders of events and snapshots, for erasure."""
        self.closed = False
        """Set by the service's `close()`: every later command and query raises
        `ServiceClosedError` instead of reaching a closed store (or, in memory, working on)."""
        self._busy: dict[int, int] = {}
        self._idle = threading.Condition()

    def check_open(self) -> None:
        """Raises `ServiceClosedError` once the service is closed."""
        if self.closed:
            raise ServiceClosedError("the service was closed: build a new one on the store")

    @contextmanager
    def _running(self) -> Iterator[None]:
        """Counts a command as running, for `close_when_idle` (`ServiceClosedError` once
        closed)."""
        thread = threading.get_ident()
        with self._idle:
            self.check_open()
            self._busy[thread] = self._busy.get(thread, 0) + 1
        try:
            yield
        finally:
            with self._idle:
                self._busy[thread] -= 1
                if not self._busy[thread]:
                    del self._busy[thread]
                self._idle.notify_all()

    def close_when_idle(self) -> None:
        """Refuses new commands, then waits for those running in other threads to finish:
        a store closed under a running statement can crash the process (SQLite's module
        does), and what they had left to save would be lost. A command of this thread (a
        callback that closes the service) is not waited for."""
        me = threading.get_ident()
        with self._idle:
            self.closed = True
            self._idle.wait_for(lambda: not set(self._busy) - {me})

    def run(self, session_id: UUID, command: Callable[[], T]) -> T:
        """Runs a command on the session holding its command lock, and again on another
        process's conflicting write, re-reading the session after a short random pause."""
        with self._running():
            return self._run(session_id, command)

    def _run(self, session_id: UUID, command: Callable[[], T]) -> T:
        for attempt in range(CONFLICT_RETRIES):
            try:
                # A failed attempt leaves nothing unsaved in the cache (see `SessionLoader`).
                with self.command_locks.held(session_id):
                    checkpoint()  # a call cancelled while it waited for the session stops here
                    return self.loader.run(command)
            except IntegrityError as error:
                self.check_erased(session_id, error)
                if attempt == CONFLICT_RETRIES - 1:
                    raise ConcurrentWriteError(
                        f"the session kept changing under this command ({CONFLICT_RETRIES} "
                        "tries); nothing of it was saved"
                    ) from error
                logger.info("concurrent write; retrying (attempt %d)", attempt + 1)
                # Writers that collided and retry at once collide again: spread them out.
                time.sleep(random.uniform(0, CONFLICT_PAUSE * 2**attempt))
            except ConnectionPoolClosedError as error:
                raise closed_under_command() from error
            except PersistenceError as error:
                raise StoreError(f"the session store failed: {error}") from error
        raise AssertionError("unreachable")  # pragma: no cover

    def load(self, session_id: UUID) -> Session:
        """The session to change, inside a command given to `run`: the cached session
        itself (see `SessionLoader`); `SessionDeletedError` for a deleted one."""
        session = self.loader.for_command(session_id)
        if session.deleted is not None:
            raise SessionDeletedError(f"session {session_id} was deleted: {session.deleted}")
        return session

    def save(self, session: Session) -> None:
        """Saves every event the session recorded since it was loaded, in one transaction;
        a command whose asyncio caller was cancelled stops here instead, saving nothing more
        (`abridged.application.cancellation`)."""
        checkpoint()
        self._save(session)

    def save_new(self, session: Session) -> None:
        """Saves a session just started; `SessionExistsError` when its id is taken."""
        self.check_open()
        checkpoint()
        try:
            with store_errors():
                self._save(session)
        except IntegrityError as error:
            self.check_erased(session.id, error)
            raise SessionExistsError(
                f"a session with id {session.id} exists already; nothing was saved"
            ) from error
        # Its first command uses it as it is, instead of reading back what was just written.
        self.loader.adopt(session)

    @contextmanager
    def compaction_lock(self, session_id: UUID) -> Iterator[None]:
        """Holds the session's compaction lock: no other compaction of it runs meanwhile."""
        held = self.locks.acquire(session_id)
        try:
            yield
        finally:
            held.release()

    def session(self, session_id: UUID, version: int | None = None) -> Session:
        """A copy of the session to read (as it was at `version`, when given)."""
        self.check_open()
        with store_errors():
            session = self.loader.for_query(session_id, version)
        if session.deleted is not None:
            raise SessionDeletedError(f"session {session_id} was deleted: {session.deleted}")
        return session

    def history(self, session_id: UUID) -> list[Aggregate.Event]:
        """Every event of the session, oldest first."""
        self.check_open()
        with store_errors():
            events = cast(list[Aggregate.Event], list(self._events.get(session_id)))
        if not events:
            raise UnknownSessionError(f"no session with id {session_id}")
        held_ledgers(events)  # a ledger update records what changed: each gets its ledger
        return events

    def check_erased(self, session_id: UUID, error: Exception) -> None:
        """Raises `SessionErasedError` when the store refused a write because the session was
        erased (its tombstone), instead of taking it for a concurrent write to retry."""
        if ERASED_MARK in str(error) or ERASED_MARK in str(error.__cause__ or ""):
            self.loader.evict(session_id)
            raise SessionErasedError(
                f"session {session_id} was erased while this command ran; nothing was saved"
            ) from None


@contextmanager
def store_errors() -> Iterator[None]:
    """A store's failure as `StoreError`; a conflict (`IntegrityError`) is left to the caller."""
    try:
        yield
    except IntegrityError:
        raise
    except ConnectionPoolClosedError as error:
        raise closed_under_command() from error
    except PersistenceError as error:
        raise StoreError(f"the session store failed: {error}") from error


def closed_under_command() -> ServiceClosedError:
    """The error of a command or query that was running when the service closed its store."""
    return ServiceClosedError(
        "the service was closed while this call ran; what it had not saved was not saved"
    )
