"""Loading sessions for commands: the cached session itself, not a copy, kept correct.

eventsourcing's repository keeps recently used sessions in memory and fast-forwards them from
the store on every load, so a session written by another process (or another service on the
same store) is brought up to date by the events it has not seen: a load is one indexed query
that usually returns nothing. By default the repository then copies the cached session for
each command, so that a command which fails half-way leaves the cache untouched; that copy
costs a pass over the retained tail and its indexes on every command.

`SessionLoader` hands a command the cached session itself and keeps it correct instead:

- a command that raises (a lost race on save included) evicts the sessions it loaded, so
  the next load rebuilds them from the store and nothing unsaved survives in memory;
- while a command of this process works on a session, another thread's load of it is
  rebuilt from the store (the latest snapshot and the events after it), never taken from or
  fast-forwarded into the object the first command is changing;
- a cached session that the fast-forward finds nothing new for is looked for in the store
  (its first event): another process may have erased it, and a load that found nothing new
  would otherwise hand out the erased content (docs/security.md, "Erasure").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Repository
from eventsourcing.persistence import AggregateRecorder

from abridged.domain.errors import UnknownSessionError
from abridged.domain.session import Session

T = TypeVar("T")

LATEST = 2**62
"""A version bound above any session's, to rebuild the latest version from the store."""


def still_stored(recorder: AggregateRecorder, session_id: UUID) -> bool:
    """Whether the session's first event is still in the store (not erased): one indexed
    read, undecoded, of an event that holds the session's set-up, never a message."""
    return bool(recorder.select_events(session_id, lte=1, limit=1))


class SessionLoader:
    """Loads sessions through a repository for commands (shared) and queries (copied)."""

    def __init__(self, repository: Repository[UUID]) -> None:
        self.repository = repository
        self._lock = threading.Lock()
        self._busy: set[UUID] = set()
        self._local = threading.local()

    def for_command(self, session_id: UUID) -> Session:
        """The session to change in the current command (run it inside `command()`)."""
        loaded: list[UUID] | None = getattr(self._local, "loaded", None)
        if loaded is None:
            raise RuntimeError("a session is loaded for a command only inside command()")
        if session_id in loaded:
            return self._get(session_id, copy=False)
        with self._lock:
            busy = session_id in self._busy
            if not busy:
                self._busy.add(session_id)
                loaded.append(session_id)
        if busy:
            return self._rebuilt(session_id)
        return self._get(session_id, copy=False)

    def for_query(self, session_id: UUID, version: int | None = None) -> Session:
        """A copy of the session, safe to read while commands run."""
        with self._lock:
            busy = session_id in self._busy
        if version is not None or busy:
            return self._rebuilt(session_id, version)
        return self._get(session_id, copy=True)

    @contextmanager
    def command(self) -> Iterator[None]:
        """The scope of one command; when it raises, what it loaded leaves the cache."""
        outer = getattr(self._local, "loaded", None)
        if outer is not None:  # a nested command shares the outer one's scope
            yield
            return
        loaded: list[UUID] = []
        self._local.loaded = loaded
        try:
            yield
        except BaseException:
            for session_id in loaded:
                self.evict(session_id)
            raise
        finally:
            self._local.loaded = None
            with self._lock:
                self._busy.difference_update(loaded)

    def run(self, command: Callable[[], T]) -> T:
        with self.command():
            return command()

    def adopt(self, session: Session) -> None:
        """Caches a session just started and saved: the state a load would rebuild from
        its events (replay equals live), without the reads."""
        cache = self.repository.cache
        if cache is not None:
            cache.put(session.id, session)

    def evict(self, session_id: UUID) -> None:
        cache = self.repository.cache
        if cache is not None:
            with suppress(KeyError):
                cache.get(session_id, evict=True)

    def _get(self, session_id: UUID, *, copy: bool) -> Session:
        cached = self._cached_version(session_id)
        try:
            session: object = self.repository.get(session_id, deepcopy_from_cache=copy)
        except AggregateNotFoundError:
            raise UnknownSessionError(f"no session with id {session_id}") from None
        assert isinstance(session, Session)
        if cached is not None and session.version == cached and not self._stored(session_id):
            # Nothing new, and nothing at all: another process erased it since this one
            # cached it. Served from memory, its content would reach a request.
            self.evict(session_id)
            raise UnknownSessionError(f"no session with id {session_id}")
        return session

    def _cached_version(self, session_id: UUID) -> int | None:
        cache = self.repository.cache
        if cache is None:
            return None
        try:
            return int(cache.get(session_id).version)
        except KeyError:
            return None

    def _stored(self, session_id: UUID) -> bool:
        return still_stored(self.repository.event_store.recorder, session_id)

    def _rebuilt(self, session_id: UUID, version: int | None = None) -> Session:
        try:
            at = LATEST if version is None else version
            session: object = self.repository.get(session_id, version=at)
        except AggregateNotFoundError:
            raise UnknownSessionError(f"no session with id {session_id}") from None
        assert isinstance(session, Session)
        return session
