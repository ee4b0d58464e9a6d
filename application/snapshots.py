"""Snapshots that point at the stored messages instead of copying them.

A session's messages are stored once, in their `MessageAppended` events. A snapshot that held
the retained tail's messages grew with it (a whole window of tool output, tens of kilobytes
and more, written every interval and decoded by every cold load). `SessionSnapshot` keeps, for
each retained message, its position, its counts, its truncations and what pruning or a
downgrade shows instead (`EntryCounts`), plus the session's indexes; the messages themselves
are read back from their events when the snapshot is loaded, by `SessionRepository`, in one
query over the versions the session records (`Session.entry_versions`).

A message whose event is not known (a session snapshotted by an earlier version) stays whole
in the snapshot, as before; snapshots of the earlier shape load as they did.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast
from uuid import UUID

import attrs
from eventsourcing.application import AggregateNotFoundError, ProjectorFunction, Repository
from eventsourcing.domain import Snapshot
from eventsourcing.persistence import JSONTranscoder, Transcoding

from abridged.domain.context import Entry
from abridged.domain.session import Session
from abridged.domain.truncation import Replacement, Truncation


@attrs.frozen
class EntryCounts:
    """A retained message in a snapshot, without its body: where it is and how it shows."""

    position: int
    tokens: int
    block_tokens: tuple[int, ...]
    truncations: tuple[Truncation, ...] = ()
    replacements: tuple[Replacement, ...] = ()

    @classmethod
    def of(cls, entry: Entry) -> EntryCounts:
        return cls(
            entry.position, entry.tokens, entry.block_tokens, entry.truncations, entry.replacements
        )


class SessionSnapshot(Snapshot):
    """A snapshot of a `Session` whose retained messages stay in their events."""

    @classmethod
    def take(cls, aggregate: Any) -> Any:
        snapshot = super().take(aggregate)
        session = cast(Session, aggregate)
        # Made of the messages: a load derives it from them.
        snapshot.state.pop("shown_messages", None)
        versions = session.entry_versions
        snapshot.state["entries"] = [
            EntryCounts.of(e) if v else e for e, v in zip(session.entries, versions, strict=True)
        ]
        return snapshot


class SessionRepository(Repository[UUID]):
    """eventsourcing's repository, reading the messages a `SessionSnapshot` points at."""

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
                    self._read_messages(initial)
                    initial.shown_messages = [e.shown_message for e in initial.entries]
        events = self.event_store.get(originator_id=aggregate_id, gt=gt, lte=version)
        aggregate = projector_func(initial, cast(Iterable[Any], events))
        if aggregate is None:
            raise AggregateNotFoundError(
                f"Aggregate {aggregate_id!r} version {version!r} not found."
            )
        return aggregate

    def _read_messages(self, session: Session) -> None:
        stubs = [k for k, e in enumerate(session.entries) if isinstance(e, EntryCounts)]
        if not stubs:
            return
        versions = [session.entry_versions[k] for k in stubs]
        found = {
            event.originator_version: event
            for event in self.event_store.get(
                originator_id=session.id, gt=min(versions) - 1, lte=max(versions)
            )
            if isinstance(event, Session.MessageAppended)
        }
        entries = cast(list[Any], session.entries)
        for k, v in zip(stubs, versions, strict=True):
            counts = cast(EntryCounts, entries[k])
            entries[k] = Entry(
                counts.position,
                found[v].message,
                counts.tokens,
                counts.block_tokens,
                counts.truncations,
                counts.replacements,
            )


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


def bodiless(entries: Sequence[object]) -> int:
    """How many entries of a stored snapshot state point at their events (for tests)."""
    return sum(1 for e in entries if isinstance(e, EntryCounts))
