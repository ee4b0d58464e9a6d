"""Snapshots that point at the stored messages instead of copying them.

A session's messages are stored once, in their `MessageAppended` events. A snapshot that held
the retained tail's messages grew with it (a whole window of tool output, tens of kilobytes
and more, written every interval and decoded by every cold load). `SessionSnapshot` keeps, for
each retained message, its position, its counts, its truncations and what pruning or a
downgrade shows instead (`EntryCounts`), plus the session's indexes; the messages themselves
are read back from their events by `SessionRepository`, in one query over the versions the
session records (`Session.entry_versions`), when the loaded session first needs them: the
load installs a `StoredTail` as the source of the session's deferred tail
(`abridged.domain.tail`), so a cold load decodes no message body. Copies of the loaded session
share the source (each body is read once); a snapshot of a session whose bodies were not read
is its snapshot's table and the entries appended since; a body that cannot be read any more
raises `StoredMessagesUnavailableError`. A session is snapshotted whenever it records an event
whose replay would read every body (`READS_THE_TAIL`), so a cold load never replays one.

The tables a snapshot writes the session's state as, by columns, are
`abridged.application.snapshot_columns`.

A message whose event is not known (a session snapshotted by an earlier version) stays whole
in the snapshot, as before; snapshots of the earlier shapes (one `EntryCounts` per message, or
whole entries) load as they did.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from typing import Any, cast
from uuid import UUID

from eventsourcing.application import (
    AggregateNotFoundError,
    ProjectorFunction,
    Repository,
    project_aggregate,
)
from eventsourcing.domain import Snapshot
from eventsourcing.persistence import JSONTranscoder, Mapper, StoredEvent
from eventsourcing.utils import get_topic

from abridged.application.snapshot_columns import (
    INT_COLUMNS,
    EntryCounts,
    EntryCountsAsList,
    EntryTable,
    EntryTableAsDict,
    IntColumn,
    IntColumnAsText,
    LedgerTable,
    LedgerTableAsDict,
    ToolIdTable,
    ToolIdTableAsDict,
)
from abridged.application.transcodings import MessageAsJSON, MessageAsWire
from abridged.domain.context import Entry
from abridged.domain.errors import SessionError, StoreError
from abridged.domain.messages import Message
from abridged.domain.session import Session
from abridged.domain.tail import DeferredTail


class SessionSnapshot(Snapshot):
    """A snapshot of a `Session` whose retained messages stay in their events."""

    @classmethod
    def take(cls, aggregate: Any) -> Any:
        snapshot = super().take(aggregate)
        session = cast(Session, aggregate)
        state = snapshot.state
        # Made of the messages: a load derives it from them.
        state.pop("shown_messages", None)
        state["entries"] = table_of(session)
        state["ledger"] = LedgerTable.of(session.ledger)
        for name in INT_COLUMNS:
            state[name] = IntColumn(state[name])
        tool_ids: dict[str, int] = state["tool_ids"]
        state["tool_ids"] = ToolIdTable(list(tool_ids), IntColumn(list(tool_ids.values())))
        return snapshot

    def mutate(self, _: None) -> Any:
        session = super().mutate(None)
        # JSON gives a tuple back as a list: these are tuples in the state every command and
        # every replay leave, and a reloaded session must equal them.
        for name in TUPLE_FIELDS:
            value = session.__dict__.get(name)
            if isinstance(value, list):
                session.__dict__[name] = tuple(value)
        return session


TUPLE_FIELDS = ("queued_system", "instructed_tools", "carried_system")
"""The session's state fields held as tuples (the others a snapshot holds are lists)."""


def table_of(session: Session) -> EntryTable:
    """The session's retained tail as a snapshot holds it. A tail loaded from a snapshot
    whose bodies were not read yet is that snapshot's table and the entries appended since:
    taking a snapshot reads no body."""
    entries = session.__dict__["entries"]
    pending = entries.pending if isinstance(entries, DeferredTail) else None
    if pending is not None:
        source, more = pending
        if isinstance(source, StoredTail):
            head = len(source)
            appended = EntryTable.of(cast(list[Entry], more), session.entry_versions[head:])
            return source.table.extended(appended, head)
    return EntryTable.of(session.entries, session.entry_versions)


class StoredMessagesUnavailableError(StoreError):
    """The messages of a session loaded earlier could not be read from the store when they
    were first needed (the store is gone, or the session's events were erased since)."""


class StoredTail:
    """The retained tail of a snapshot, its messages read from their events when first
    needed (`abridged.domain.tail`): all at once in one query, or the first or last alone.
    Copies of the loaded session share it, so each body is read once."""

    def __init__(
        self,
        repository: SessionRepository,
        session_id: UUID,
        table: EntryTable,
        versions: Sequence[int],
        through: int,
    ) -> None:
        self.repository = repository
        # The service whose store holds the bodies: kept open while they may be read (a
        # service closes its store when it is collected).
        self.service = repository.service
        self.session_id = session_id
        self.table = table
        self.versions = list(versions)
        self.through = through
        """The snapshot's version: the events up to it say how the entries are shown."""
        self._replaced = frozenset(table.replaced)
        self._lock = threading.Lock()
        self._entries: list[Entry] | None = None
        self._edges: dict[int, Entry] = {}
        self.reads = 0
        """How many times bodies were read from the store (for tests and benchmarks)."""

    def __len__(self) -> int:
        return len(self.table)

    @property
    def read(self) -> bool:
        return self._entries is not None

    def entries(self) -> list[Entry]:
        with self._lock:
            if self._entries is None:
                changes: list[tuple[int, int, str | None]] = []
                found = self._read(self.versions, changes if self._replaced else None)
                self._entries = self.table.entries(
                    [found[v] if v else None for v in self.versions], changes
                )
            return self._entries

    def entry(self, index: int) -> Entry:
        if index in self._replaced:  # shown otherwise: what it shows is read with the rest
            return self.entries()[index]
        with self._lock:
            if self._entries is not None:
                return self._entries[index]
            entry = self._edges.get(index)
            if entry is None:
                version = self.versions[index]
                found = self._read([version]) if version else {}
                entry = self.table.entry(index, found.get(version))
                self._edges[index] = entry
            return entry

    def _read(
        self, versions: Sequence[int], changes: list[tuple[int, int, str | None]] | None = None
    ) -> dict[int, Message]:
        self.reads += 1
        try:
            found = self.repository.messages(
                self.session_id, versions, self.through if changes is not None else 0, changes
            )
        except Exception as error:
            raise StoredMessagesUnavailableError(
                f"the messages of session {self.session_id} could not be read: {error}"
            ) from error
        missing = [v for v in versions if v and v not in found]
        if missing:
            raise StoredMessagesUnavailableError(
                f"the messages of session {self.session_id} are no longer stored "
                f"(events {missing[0]}..{missing[-1]})"
            )
        return found


class SessionRepository(Repository[UUID]):
    """eventsourcing's repository, reading the messages a `SessionSnapshot` points at when
    the session first needs them."""

    service: object = None
    """The application that owns this repository (set when it is constructed)."""

    def _reconstruct_aggregate(
        self, aggregate_id: UUID, version: int | None, projector_func: ProjectorFunction[Any, Any]
    ) -> Any:
        initial: Any = None
        gt: int | None = None
        if self.snapshot_store is not None:
            snapshots = list(
                self.snapshot_store.get(originator_id=aggregate_id, desc=True, limit=1, lte=version)
            )
            if snapshots:
                gt = snapshots[0].originator_version
                initial = snapshots[0].mutate(None)  # type: ignore[attr-defined]
                if isinstance(initial, Session):
                    self._install_tail(initial)
                    ledger: object = initial.ledger
                    if isinstance(ledger, LedgerTable):
                        initial.ledger = ledger.entries()
        events = self.event_store.get(originator_id=aggregate_id, gt=gt, lte=version)
        if projector_func is project_aggregate:
            projector_func = _project
        aggregate = projector_func(initial, cast(Iterable[Any], events))
        if aggregate is None:
            raise AggregateNotFoundError(
                f"Aggregate {aggregate_id!r} version {version!r} not found."
            )
        return aggregate

    def _install_tail(self, session: Session) -> None:
        table: object = session.entries
        if isinstance(table, EntryTable):
            session.defer_tail(
                StoredTail(self, session.id, table, session.entry_versions, session.version)
            )
            return
        # Snapshots of earlier shapes: their messages are read now.
        stubs = [k for k, e in enumerate(session.entries) if isinstance(e, EntryCounts)]
        if stubs:
            versions = [session.entry_versions[k] for k in stubs]
            found = self.messages(session.id, versions)
            entries = cast(list[Any], session.entries)
            for k, v in zip(stubs, versions, strict=True):
                counts = cast(EntryCounts, entries[k])
                entries[k] = Entry(
                    counts.position,
                    found[v],
                    counts.tokens,
                    counts.block_tokens,
                    counts.truncations,
                    counts.replacements,
                )
        session.shown_messages = [e.shown_message for e in session.entries]

    def messages(
        self,
        session_id: UUID,
        versions: Sequence[int],
        through: int = 0,
        changes: list[tuple[int, int, str | None]] | None = None,
    ) -> dict[int, Message]:
        """The messages of the `MessageAppended` events among `versions`, by version, read in
        one query over their range (extended to `through`). With `changes`, the blocks the
        events of that range show otherwise (pruned, downgraded) are added to it, as
        `(position, block index, text)` in the order they were recorded.

        Only the message is needed: a row of the current `MessageAppended` shape is parsed as
        plain JSON and its message decoded, without building the event (its timestamp, usage
        and counts); any other row goes through the mapper, as eventsourcing reads it."""
        wanted = [v for v in versions if v]
        if not wanted:
            return {}
        mapper = self.event_store.mapper
        found: dict[int, Message] = {}
        rows = self.event_store.recorder.select_events(
            session_id, gt=min(wanted) - 1, lte=max(*wanted, through)
        )
        for row in rows:
            message = _message_of(row, mapper) if row.topic == _MESSAGE_TOPIC else None
            if message is None:
                event = mapper.to_domain_event(row)
                if changes is not None and isinstance(event, Session.ToolsPruned):
                    changes.extend((o.position, o.block_index, o.text) for o in event.outputs)
                elif changes is not None and isinstance(event, Session.ReasoningDowngraded):
                    changes.extend((b.position, b.block_index, b.text) for b in event.blocks)
                if not isinstance(event, Session.MessageAppended):
                    continue
                message = event.message
            found[row.originator_version] = message
        return found


_MESSAGE_TOPIC = get_topic(Session.MessageAppended)
_MESSAGE_VERSIONS = (1, 2, 3)
"""The `MessageAppended` shapes whose message is stored as it is now (version 2 added
`saving` beside it, version 3 `prefix_revision`). A new version must be added here, or its
messages are read through the mapper, event by event (`test_cold_loads` checks)."""
_MESSAGES = MessageAsJSON()
"""How a message is stored (the transcoding the mapper would use for it)."""
_WIRE = MessageAsWire()
"""How a large message is stored (`encode_state`)."""


def _project(aggregate: Any, events: Iterable[Any]) -> Any:
    """eventsourcing's `project_aggregate` without its check that each event satisfies a
    runtime protocol: about 10 microseconds an event, a sixth of replaying one on a cold load.
    Every event of a session is an `Aggregate.Event`, which has `mutate`."""
    for event in events:
        aggregate = event.mutate(aggregate)
    return aggregate


def _message_of(row: StoredEvent, mapper: Mapper[UUID]) -> Message | None:
    """The message of a stored `MessageAppended` of the current shape, or `None` (the mapper
    then reads the row)."""
    state = row.state
    if mapper.cipher:
        state = mapper.cipher.decrypt(state)
    if mapper.compressor:
        state = mapper.compressor.decompress(state)
    try:
        plain = json.loads(state)
        stored = plain["message"]
        if plain.get("class_version", 1) not in _MESSAGE_VERSIONS:
            return None
        if stored["_type_"] == _WIRE.name:
            return _WIRE.decode(stored["_data_"])
        if stored["_type_"] != _MESSAGES.name:
            return None
        return _MESSAGES.decode(stored["_data_"])
    except (ValueError, KeyError, TypeError, SessionError):
        return None


def register_snapshot_transcodings(transcoder: JSONTranscoder) -> None:
    """The values only snapshots hold (their name is persisted: never rename it)."""
    transcoder.register(EntryCountsAsList())
    transcoder.register(EntryTableAsDict())
    transcoder.register(LedgerTableAsDict())
    transcoder.register(IntColumnAsText())
    transcoder.register(ToolIdTableAsDict())


TAIL_PER_INTERVAL = 120
"""A snapshot is taken at least every `1 / TAIL_PER_INTERVAL` of the retained tail's length
in events (see `snapshot_interval`)."""


def snapshot_interval(interval: int, retained: int) -> int:
    """The snapshot interval for a session retaining `retained` messages: `interval`, doubled
    until it is at least `retained / TAIL_PER_INTERVAL` (50 up to 6,000 retained messages,
    then 100 up to 12,000, 200 up to 24,000...).

    A snapshot costs in proportion to the retained tail (about 0.75 µs per message: its
    columns and indexes, no message or pruned text), and a cold load replays the events
    after it (about 25 µs each: decoding the message, whose saving is recorded, and keeping
    the indexes), on top of decoding the snapshot (about 0.45 µs per message). Growing the
    interval with the tail keeps the snapshots' cost per event bounded (60 to 120 messages'
    worth), while the replay stays a bounded share of the cold load: at most 100 events, about
    2.5 ms, for a 10,000-message tail whose snapshot decodes in 4.5 ms. The intervals are
    multiples of each other, so a session whose tail shrinks (a compaction) is snapshotted
    again at most one interval later (and at the compaction itself: `snapshot_due`)."""
    every = interval
    while every * TAIL_PER_INTERVAL < retained:
        every *= 2
    return every


READS_THE_TAIL = (
    Session.ToolsPruned,
    Session.ReasoningDowngraded,
    Session.CompactionCompleted,
    Session.SettingsChanged,
)
"""Events whose mutators change retained messages or drop them: replaying one reads every
retained body. A session is snapshotted when it records one, so a cold load never replays
it and reads no body (`snapshot_due`)."""


def snapshot_due(session_id: UUID, events: Iterable[Any], interval: int, retained: int) -> bool:
    """Whether the session that just recorded `events` is snapshotted now: an event falls on
    its interval (`snapshot_interval`), or one reads the retained tail on replay
    (`READS_THE_TAIL`). A snapshot right after a compaction costs little (the tail just
    shrank); after a prune it costs one snapshot of the tail, as rare as the prunes."""
    every = snapshot_interval(interval, retained)
    return any(
        e.originator_id == session_id
        and (e.originator_version % every == 0 or isinstance(e, READS_THE_TAIL))
        for e in events
    )
