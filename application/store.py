"""How a service stores sessions: eventsourcing's application, set up for abridged.

`SessionStore` is the `Application` base of `Sessions`: the transcodings of abridged's values,
a mapper that resolves only abridged's own topics and chains each stored event's hash to its
session's previous one (`abridged.application.chain`), a repository that reads the messages
a snapshot points at (`abridged.application.snapshots`), and snapshots taken of the session
just saved, at intervals that grow with its retained tail.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, cast
from uuid import UUID

from eventsourcing.application import (
    Application,
    ProcessingEvent,
    ProjectorFunction,
    Repository,
    project_aggregate,
)
from eventsourcing.persistence import (
    IntegrityError,
    JSONTranscoder,
    Mapper,
    PersistenceError,
    Recording,
)

from abridged.application.chain import ChainingMapper
from abridged.application.snapshots import (
    SessionRepository,
    SessionSnapshot,
    register_snapshot_transcodings,
    snapshot_due,
)
from abridged.application.topics import TrustedTopicsMapper
from abridged.application.transcodings import register_transcodings
from abridged.domain.errors import SessionError
from abridged.domain.session import Session

__all__ = ["SavedListener", "SessionMapper", "SessionStore"]

logger = logging.getLogger(__name__)

SavedListener = Callable[[Sequence[object]], None]
"""Called with the domain events of a save, once they are stored."""


class SessionMapper(TrustedTopicsMapper, ChainingMapper):
    """The store's mapper: only abridged's own event classes are resolved, and each stored
    event chains a hash to its session's previous one."""


class SessionStore(Application[UUID]):
    """eventsourcing's application, storing abridged's sessions (see the module)."""

    # Chosen by measurement (docs/performance.md): every 50 events keeps the cold loads of a
    # compacting session short; past 1,000 retained messages the interval grows with the tail
    # (`snapshot_interval`), since a snapshot costs in proportion to it.
    snapshotting_intervals = {Session: 50}  # noqa: RUF012 (the library reads a class dict)

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        super().register_transcodings(transcoder)
        register_transcodings(transcoder)
        register_snapshot_transcodings(transcoder)

    def construct_mapper(self) -> Mapper[UUID]:
        # Each stored event carries a hash chained to its session's previous event, and the
        # host's correlation id (`abridged.application.chain`); only abridged's own event
        # classes are resolved, since a store's topics decide which modules resolving them
        # imports (`abridged.application.topics.TrustedTopicsMapper`).
        mapper = self.factory.mapper(
            transcoder=self.construct_transcoder(), mapper_class=SessionMapper
        )
        cast(ChainingMapper, mapper).previous = self._stored_hash
        return mapper

    def _stored_hash(self, session_id: UUID, version: int) -> str | None:
        rows = self.recorder.select_events(session_id, gt=version - 1, lte=version)
        return cast(ChainingMapper, self.mapper).stored_hash(rows[0]) if rows else None

    def _record(self, processing_event: ProcessingEvent[UUID]) -> list[Recording[UUID]]:
        mapper = cast(ChainingMapper, self.mapper)
        try:
            recordings = super()._record(processing_event)
        except PersistenceError as error:
            if isinstance(error, IntegrityError) or not self._stored_after_all(mapper):
                mapper.discarded()
                raise
            # The commit reached the store, its answer did not (a connection lost after
            # COMMIT): the save stands, so a caller does not retry what is stored already.
            logger.warning("the store failed after the events were stored: %s", error)
            recordings = []
        except BaseException:
            mapper.discarded()
            raise
        mapper.committed()
        return recordings

    def _stored_after_all(self, mapper: ChainingMapper) -> bool:
        """Whether the events just mapped are in the store, each session's last one read
        back and matched by its chained hash (which covers the event's whole body and
        everything before it); `False` when the store cannot be read either."""
        last: dict[UUID, tuple[int, str]] = {}
        for originator_id, version, digest in mapper.pending:
            last[originator_id] = (version, digest)
        try:
            for originator_id, (version, digest) in last.items():
                rows = self.recorder.select_events(originator_id, gt=version - 1, lte=version)
                if not rows or mapper.stored_hash(rows[0]) != digest:
                    return False
        except Exception:
            logger.info("the store could not be read after a failed save", exc_info=True)
            return False
        return bool(last)

    _saved_listeners: tuple[SavedListener, ...] = ()

    def on_saved(self, listener: SavedListener) -> None:
        """Calls `listener` with the events of every save of this service once they are
        stored, in the saving thread: an adapter keeping a view of the sessions current
        without reading back what was just written. What it raises is logged; the save
        stands."""
        self._saved_listeners = (*self._saved_listeners, listener)

    def _notify(self, recordings: list[Recording[UUID]]) -> None:
        super()._notify(recordings)
        if not self._saved_listeners:
            return
        events = [recording.domain_event for recording in recordings]
        for listener in self._saved_listeners:
            try:
                listener(events)
            except Exception:
                logger.exception("a listener of saved events failed")

    def construct_repository(self) -> Repository[UUID]:
        # eventsourcing's repository, configured from the environment as usual, reading the
        # messages a snapshot points at (`abridged.application.snapshots`).
        repository = super().construct_repository()
        repository.__class__ = SessionRepository
        cast(SessionRepository, repository).service = self
        return repository

    def take_snapshot(
        self,
        aggregate_id: UUID,
        version: int | None = None,
        projector_func: ProjectorFunction[Any, Any] = project_aggregate,
    ) -> None:
        """Snapshots the session at `version` (the latest by default); the snapshot points
        at the events that hold the retained messages instead of copying them."""
        if self.snapshots is None:  # pragma: no cover - snapshotting is always on
            raise SessionError("this service stores no snapshots")
        session = self.repository.get(aggregate_id, version=version, projector_func=projector_func)
        self.snapshots.put([SessionSnapshot.take(session)])

    def _take_snapshots(self, processing_event: ProcessingEvent[UUID]) -> None:
        # eventsourcing re-reads the session from the store to snapshot it; the session just
        # saved is that state already, so it is snapshotted as it is, at its new version.
        interval = self.snapshotting_intervals.get(Session)
        if self.snapshots is None or not interval:
            return
        # The interval grows with the retained tail (`snapshot_interval`): a snapshot costs in
        # proportion to it. An event whose replay would read every retained body is
        # snapshotted at once, so cold loads read none (`snapshot_due`).
        for session_id, session in processing_event.aggregates.items():
            if not isinstance(session, Session):
                continue
            if snapshot_due(session_id, processing_event.events, interval, len(session.entries)):
                self.snapshots.put([SessionSnapshot.take(session)])
