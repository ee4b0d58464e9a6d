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

The facts ledger is written as one `LedgerTable` (a column per field), for the same reason.
The retained tail is written as one `EntryTable`: a column per field (positions, counts,
block counts), and the rare truncations, replacements and whole messages apart. Every column
of integers, the tail's and the indexes' (`INT_COLUMNS`), is written as one string
(`IntColumn`): a run of consecutive integers as its ends, any other column packed as 32-bit
(or 64-bit) integers in base64. A cold load decodes each column with one call instead of
parsing thousands of numbers: a 10,000-message snapshot decodes in about half the time.

A message whose event is not known (a session snapshotted by an earlier version) stays whole
in the snapshot, as before; snapshots of the earlier shapes (one `EntryCounts` per message, or
whole entries) load as they did.
"""

from __future__ import annotations

import array
import base64
import json
import sys
import threading
from collections.abc import Iterable, Sequence
from typing import Any, cast
from uuid import UUID

import attrs
from eventsourcing.application import (
    AggregateNotFoundError,
    ProjectorFunction,
    Repository,
    project_aggregate,
)
from eventsourcing.domain import Snapshot
from eventsourcing.persistence import JSONTranscoder, Mapper, StoredEvent, Transcoding
from eventsourcing.utils import get_topic

from abridged.application.transcodings import MessageAsJSON
from abridged.domain.context import Entry
from abridged.domain.errors import SessionError, StoreError
from abridged.domain.ledger import LedgerEntry
from abridged.domain.messages import Message
from abridged.domain.session import Session
from abridged.domain.tail import DeferredTail
from abridged.domain.truncation import Replacement, Truncation


@attrs.frozen
class EntryCounts:
    """A retained message in a snapshot of an earlier shape (one per message), without its
    body: where it is and how it shows. Only read: snapshots are written as `EntryTable`s."""

    position: int
    tokens: int
    block_tokens: tuple[int, ...]
    truncations: tuple[Truncation, ...] = ()
    replacements: tuple[Replacement, ...] = ()


@attrs.frozen
class EntryTable:
    """A snapshot's retained tail by columns: entry `k` is at `positions[k]`, counts
    `tokens[k]`, and its `block_lengths[k]` block counts follow those of the entries before it
    in `block_flat` (one flat list: a load builds no list per entry); `extras` lists
    `(k, truncations, replacements)` for the entries with either, `whole` lists `(k, entry)`
    for those stored whole (their event is not known). The others' messages are read back
    from their events, and so are the texts they are shown with instead (pruned outputs,
    downgraded thinking) for the entries `replaced` lists: from the `ToolsPruned` and
    `ReasoningDowngraded` events (megabytes of pruned output text at 10,000 messages, which
    every snapshot would otherwise write and every cold load decode)."""

    positions: list[int]
    tokens: list[int]
    block_lengths: list[int]
    block_flat: list[int]
    extras: list[tuple[int, tuple[Truncation, ...], tuple[Replacement, ...]]]
    whole: list[tuple[int, Entry]]
    replaced: list[int] = attrs.field(factory=list)

    @classmethod
    def of(cls, entries: Sequence[Entry], versions: Sequence[int]) -> EntryTable:
        pairs = list(zip(entries, versions, strict=True))
        # The first and last entries keep what they show: a deferred tail reads them alone.
        edges = {0, len(pairs) - 1}
        return cls(
            positions=[e.position for e in entries],
            tokens=[e.tokens for e in entries],
            block_lengths=[len(e.block_tokens) for e in entries],
            block_flat=[n for e in entries for n in e.block_tokens],
            extras=[
                (k, e.truncations, e.replacements if k in edges else ())
                for k, (e, v) in enumerate(pairs)
                if v and (e.truncations or (k in edges and e.replacements))
            ],
            whole=[(k, e) for k, (e, v) in enumerate(pairs) if not v],
            replaced=[
                k for k, (e, v) in enumerate(pairs) if v and e.replacements and k not in edges
            ],
        )

    def __len__(self) -> int:
        return len(self.positions)

    def bodiless(self) -> int:
        return len(self.positions) - len(self.whole)

    def extended(self, more: EntryTable, offset: int) -> EntryTable:
        """This table followed by `more`, whose entries come at `offset` on."""
        return EntryTable(
            positions=[*self.positions, *more.positions],
            tokens=[*self.tokens, *more.tokens],
            block_lengths=[*self.block_lengths, *more.block_lengths],
            block_flat=[*self.block_flat, *more.block_flat],
            extras=[*self.extras, *((k + offset, t, r) for k, t, r in more.extras)],
            whole=[*self.whole, *((k + offset, e) for k, e in more.whole)],
            replaced=[*self.replaced, *(k + offset for k in more.replaced)],
        )

    def entry(self, k: int, message: Message | None) -> Entry:
        """Entry `k`, with `message` unless it is stored whole (not for one `replaced`: the
        first and last entries never are)."""
        if message is None:
            return dict(self.whole)[k]
        extras = next(((t, r) for j, t, r in self.extras if j == k), ((), ()))
        start = sum(self.block_lengths[:k])
        return Entry(
            self.positions[k],
            message,
            self.tokens[k],
            tuple(self.block_flat[start : start + self.block_lengths[k]]),
            extras[0],
            extras[1],
        )

    def entries(
        self,
        messages: Sequence[Message | None],
        changes: Sequence[tuple[int, int, str | None]] = (),
    ) -> list[Entry]:
        """The entries, with `messages[k]` for each entry not stored whole, and the
        `replaced` entries shown as `changes` say: `(position, block index, text)`, in the
        order the session recorded them."""
        extras = {k: (t, r) for k, t, r in self.extras}
        whole = dict(self.whole)
        shown: dict[int, list[Replacement]] = {}
        if self.replaced:
            wanted = {self.positions[k] for k in self.replaced}
            for position, block_index, text in changes:
                if position in wanted:
                    shown.setdefault(position, []).append(Replacement(block_index, text))
        entries: list[Entry] = []
        empty: tuple[tuple[Truncation, ...], tuple[Replacement, ...]] = ((), ())
        flat = self.block_flat
        end = 0
        for k, (position, tokens, length, message) in enumerate(
            zip(self.positions, self.tokens, self.block_lengths, messages, strict=True)
        ):
            start, end = end, end + length
            if message is None:
                entries.append(whole[k])
                continue
            blocks = flat[start:end]
            truncations, replacements = extras.get(k, empty)
            if position in shown:
                replacements = tuple(shown[position])
            entries.append(
                Entry(position, message, tokens, tuple(blocks), truncations, replacements)
            )
        return entries


@attrs.frozen
class LedgerTable:
    """A snapshot's facts ledger by columns (hundreds to thousands of entries: one JSON
    object each would cost a transcoder call per entry and per load)."""

    kinds: list[str]
    texts: list[str]
    firsts: list[int]
    lasts: list[int]
    sources: list[str] = attrs.field(factory=list)
    """The tools entries were read from (empty in snapshots taken before sources were
    recorded: every entry's source is then "")."""

    @classmethod
    def of(cls, entries: Sequence[LedgerEntry]) -> LedgerTable:
        return cls(
            kinds=[e.kind for e in entries],
            texts=[e.text for e in entries],
            firsts=[e.first_position for e in entries],
            lasts=[e.last_position for e in entries],
            sources=[e.source for e in entries] if any(e.source for e in entries) else [],
        )

    def entries(self) -> list[LedgerEntry]:
        sources = self.sources or [""] * len(self.kinds)
        return [
            LedgerEntry(kind, text, first, last, source)
            for kind, text, first, last, source in zip(
                self.kinds, self.texts, self.firsts, self.lasts, sources, strict=True
            )
        ]


@attrs.frozen
class IntColumn:
    """A column of integers as a snapshot writes it (`IntColumnAsText`); it loads as a
    plain list."""

    values: Sequence[int]


@attrs.frozen
class ToolIdTable:
    """The session's tool ids and the positions of the messages calling them, as two columns
    (it loads as the `dict` the session keeps)."""

    ids: list[str]
    positions: IntColumn


INT_COLUMNS = (
    "entry_versions",
    "prompt_positions",
    "thinking_positions",
    "output_sums",
    "saving_sums",
    "thinking_sums",
)
"""The session's attributes that are lists of integers, one item per retained message or
more: a snapshot writes each as an `IntColumn`."""


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
_MESSAGE_VERSIONS = (1, 2)
"""The `MessageAppended` shapes whose message is stored as it is now (version 2 added
`saving` beside it)."""
_MESSAGES = MessageAsJSON()
"""How a message is stored (the transcoding the mapper would use for it)."""


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
        if (
            plain.get("class_version", 1) not in _MESSAGE_VERSIONS
            or stored["_type_"] != _MESSAGES.name
        ):
            return None
        return _MESSAGES.decode(stored["_data_"])
    except (ValueError, KeyError, TypeError, SessionError):
        return None


class EntryTableAsDict(Transcoding):
    """An `EntryTable` as JSON: integer columns, and the rare values apart."""

    type = EntryTable
    name = "entry_table"

    def encode(self, obj: EntryTable) -> dict[str, Any]:
        return {
            "positions": IntColumn(obj.positions),
            "tokens": IntColumn(obj.tokens),
            "block_lengths": IntColumn(obj.block_lengths),
            "block_flat": IntColumn(obj.block_flat),
            "extras": [[k, list(t), list(r)] for k, t, r in obj.extras],
            "whole": [[k, e] for k, e in obj.whole],
            "replaced": obj.replaced,
        }

    def decode(self, data: dict[str, Any]) -> EntryTable:
        if "block_flat" in data:
            lengths, flat = data["block_lengths"], data["block_flat"]
        else:  # a table of one list per entry (snapshots before the flat column)
            lengths = [len(b) for b in data["block_tokens"]]
            flat = [n for b in data["block_tokens"] for n in b]
        return EntryTable(
            positions=data["positions"],
            tokens=data["tokens"],
            block_lengths=lengths,
            block_flat=flat,
            extras=[(k, tuple(t), tuple(r)) for k, t, r in data["extras"]],
            whole=[(k, e) for k, e in data["whole"]],
            replaced=data.get("replaced", []),
        )


class LedgerTableAsDict(Transcoding):
    """A `LedgerTable` as JSON: five columns (four in snapshots older than `sources`)."""

    type = LedgerTable
    name = "ledger_table"

    def encode(self, obj: LedgerTable) -> dict[str, Any]:
        return {
            "kinds": obj.kinds,
            "texts": obj.texts,
            "firsts": obj.firsts,
            "lasts": obj.lasts,
            "sources": obj.sources,
        }

    def decode(self, data: dict[str, Any]) -> LedgerTable:
        return LedgerTable(
            data["kinds"], data["texts"], data["firsts"], data["lasts"], data.get("sources", [])
        )


TYPECODES = (
    ("B", 0, 2**8 - 1),
    ("b", -(2**7), 2**7 - 1),
    ("H", 0, 2**16 - 1),
    ("h", -(2**15), 2**15 - 1),
    ("I", 0, 2**32 - 1),
    ("i", -(2**31), 2**31 - 1),
    ("Q", 0, 2**64 - 1),
    ("q", -(2**63), 2**63 - 1),
)
"""The `array` typecodes a column may be packed with, smallest first, and their ranges: 1, 2,
4 and 8 bytes (C's `int` is 4 bytes on every platform CPython runs on; `array` checks the
length of what it reads back)."""


def pack_ints(values: Sequence[int]) -> str:
    """`values` as text: `r<first>,<count>` for a run of consecutive integers, else the
    typecode of the smallest integers that hold them all (`TYPECODES`) and the little-endian
    integers in base64. Block counts and token counts mostly take two bytes each, running
    sums four."""
    if not values:
        return "r0,0"
    first = values[0]
    if values[-1] == first + len(values) - 1 and list(values) == list(
        range(first, first + len(values))
    ):
        return f"r{first},{len(values)}"
    low, high = min(values), max(values)
    code = next(c for c, least, most in TYPECODES if least <= low and high <= most)
    packed = array.array(code, values)
    if sys.byteorder == "big":  # pragma: no cover
        packed.byteswap()
    return code + base64.b64encode(packed.tobytes()).decode("ascii")


def unpack_ints(text: str) -> list[int]:
    """The integers `pack_ints` wrote."""
    if text.startswith("r"):
        first, count = (int(part) for part in text[1:].split(","))
        return list(range(first, first + count))
    packed = array.array(text[0], base64.b64decode(text[1:]))
    if sys.byteorder == "big":  # pragma: no cover
        packed.byteswap()
    return packed.tolist()


class IntColumnAsText(Transcoding):
    """An `IntColumn` as one string (`pack_ints`); decoded, a plain list of integers."""

    type = IntColumn
    name = "int_column"

    def encode(self, obj: IntColumn) -> str:
        return pack_ints(obj.values)

    def decode(self, data: str) -> list[int]:
        return unpack_ints(data)


class ToolIdTableAsDict(Transcoding):
    """A `ToolIdTable` as two columns; decoded, the session's `dict` of tool ids."""

    type = ToolIdTable
    name = "tool_id_table"

    def encode(self, obj: ToolIdTable) -> dict[str, Any]:
        return {"ids": obj.ids, "positions": obj.positions}

    def decode(self, data: dict[str, Any]) -> dict[str, int]:
        return dict(zip(data["ids"], data["positions"], strict=True))


class EntryCountsAsList(Transcoding):
    """An `EntryCounts` as a JSON array: snapshots hold one per retained message."""

    type = EntryCounts
    name = "entry_counts"

    def encode(self, obj: EntryCounts) -> list[Any]:
        return [obj.position, obj.tokens, obj.block_tokens, obj.truncations, obj.replacements]

    def decode(self, data: list[Any]) -> EntryCounts:
        position, tokens, block_tokens, truncations, replacements = data
        return EntryCounts(
            position, tokens, tuple(block_tokens), tuple(truncations), tuple(replacements)
        )


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


def bodiless(entries: object) -> int:
    """How many entries of a stored snapshot state point at their events (for tests)."""
    if isinstance(entries, EntryTable):
        return entries.bodiless()
    return sum(1 for e in cast(Sequence[object], entries) if isinstance(e, EntryCounts))
