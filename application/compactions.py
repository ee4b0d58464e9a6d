"""One compaction, as a session's events record it: the one projection every reader uses.

A `CompactionRecord` joins a `CompactionCompleted` event with the events of the same command
before it: the decision that started it (`CompactionThresholdHit`), the summarizer's failure
(`CompactionFailed`) and the facts ledger it left (`LedgerUpdated`). `CompactionProjection`
folds a session's events, oldest first, into these records; `Sessions.compactions`, the
audit (and so `abridged audit` and the HTML report) and the compactions read model all read
them, so a figure means the same wherever it is shown.

The read model pages through the store's notification log instead of whole sessions: it
reads only the `CompactionCompleted` notifications, and folds the few events before each in
its own session, so a reader keeps no state between pages but its position.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import cast
from uuid import UUID

import attrs
from eventsourcing.application import Application

from abridged.application.topics import stored_topics
from abridged.domain.errors import SessionError
from abridged.domain.planner import Decision
from abridged.domain.session import Session

__all__ = [
    "CompactionProjection",
    "CompactionRecord",
    "InvalidPageSizeError",
    "compaction_pages",
    "compaction_records",
    "session_ids",
]


COMPLETED_TOPICS = stored_topics(Session.CompactionCompleted)
STARTED_TOPICS = stored_topics(Session.Started)
LOOKBACK = 8
"""Events before a completion that may belong to its compaction (its decision, a failure and
a ledger update come in the same command, just before it; a small margin costs nothing)."""


class InvalidPageSizeError(SessionError, ValueError):
    """A page of the notification log must hold at least one notification."""


@attrs.frozen
class CompactionRecord:
    """One compaction, as its events recorded it: why, where it cut, what it cost, who
    summarized, and the facts ledger it left."""

    session_id: UUID
    version: int
    """The version of the `CompactionCompleted` event."""
    generation: int
    at: datetime
    trigger: str
    """`threshold`, `manual`, `overflow` or `requested`; `unknown` when no decision precedes
    the completion (an altered history: the audit says so)."""
    reason: str
    strategy: str
    first_position: int
    """The first message (0-based position in the history) the summary stands for."""
    last_position: int
    messages_summarized: int
    """Messages newly summarized (a folding compaction also re-summarizes earlier chunks)."""
    replaced_chunks: int
    retained_from: int
    turns_kept: int
    tokens_before: int
    tokens_after: int
    summary: str
    summary_tokens: int
    summary_max_tokens: int
    """The limit the decision set for the summary (0 when no decision precedes it)."""
    summarizer: str
    summarizer_input_tokens: int
    summarizer_output_tokens: int
    failure: str | None
    """The summarizer's error when the summary is a fallback note, else None."""
    fallback: str | None
    """`truncate` or `raise` when the summarizer failed; None when it did not."""
    ledger_entries: int
    """Entries of the facts ledger as this compaction left it (0 when the ledger is off)."""
    ledger_tokens: int


_AS_RECORDED = (
    "generation",
    "strategy",
    "messages_summarized",
    "replaced_chunks",
    "retained_from",
    "tokens_before",
    "tokens_after",
    "summarizer",
    "summarizer_input_tokens",
    "summarizer_output_tokens",
)
"""The record's fields that are the `CompactionCompleted` event's, under the same names."""


class CompactionProjection:
    """Folds one session's events, oldest first, into its compactions."""

    def __init__(self) -> None:
        self._decision: Decision | None = None
        self._failure: Session.CompactionFailed | None = None
        self._ledger: Session.LedgerUpdated | None = None

    def record(self, event: object) -> CompactionRecord | None:
        """Takes the session's next event; returns the record of the compaction it completes,
        else None."""
        if isinstance(event, Session.CompactionThresholdHit):
            self._decision, self._failure, self._ledger = event.decision, None, None
        elif isinstance(event, Session.CompactionFailed):
            self._failure = event
        elif isinstance(event, Session.LedgerUpdated):
            self._ledger = event
        elif isinstance(event, Session.CompactionCompleted):
            return self.completed(event)
        return None

    def completed(self, event: Session.CompactionCompleted) -> CompactionRecord:
        """The record of the compaction `event` completes, from the events folded before it."""
        decision, failure, ledger = self._decision, self._failure, self._ledger
        self._decision, self._failure, self._ledger = None, None, None
        chunk = event.summary
        return CompactionRecord(
            **{name: getattr(event, name) for name in _AS_RECORDED},
            session_id=event.originator_id,
            version=event.originator_version,
            at=event.timestamp,
            trigger=decision.trigger if decision else "unknown",
            reason=decision.reason if decision else "",
            turns_kept=decision.turns_kept if decision else 0,
            summary_max_tokens=decision.summary_max_tokens if decision else 0,
            first_position=chunk.first_position,
            last_position=chunk.last_position,
            summary=chunk.text,
            summary_tokens=chunk.tokens,
            failure=failure.error if failure else None,
            fallback=failure.fallback if failure else None,
            ledger_entries=ledger.count if ledger else 0,
            ledger_tokens=ledger.tokens if ledger else 0,
        )


def compaction_records(events: Iterable[object]) -> list[CompactionRecord]:
    """Every compaction in a session's events (oldest first, from `Sessions.history`)."""
    projection = CompactionProjection()
    return [r for r in map(projection.record, events) if r is not None]


def compaction_pages(
    app: Application[UUID], after: int, page_size: int = 100
) -> Iterator[tuple[int, Sequence[tuple[int, CompactionRecord]]]]:
    """Pages of compactions after notification id `after`, oldest first, each compaction
    with the id of its notification.

    Each page comes with the notification id to resume from once its records are stored; a
    page may be empty when the log has moved on with other events only."""
    if page_size < 1:
        raise InvalidPageSizeError(f"page_size must be at least 1, not {page_size}")
    position = after
    while True:
        notifications = app.recorder.select_notifications(
            start=position, limit=page_size, topics=COMPLETED_TOPICS, inclusive_of_start=False
        )
        if not notifications:
            return
        records = [
            (n.id, _paged(app, cast(Session.CompactionCompleted, app.mapper.to_domain_event(n))))
            for n in notifications
        ]
        position = notifications[-1].id
        yield position, records


def _paged(app: Application[UUID], completed: Session.CompactionCompleted) -> CompactionRecord:
    """The record of one `CompactionCompleted`, from the events just before it."""
    version = completed.originator_version
    projection = CompactionProjection()
    for event in app.events.get(
        completed.originator_id, gt=max(0, version - LOOKBACK), lte=version - 1
    ):
        projection.record(event)
    return projection.completed(completed)


def session_ids(app: Application[UUID]) -> list[UUID]:
    """Every session in the store, oldest first."""
    ids: list[UUID] = []
    position = 0
    while True:
        page = app.recorder.select_notifications(
            start=position, limit=500, topics=STARTED_TOPICS, inclusive_of_start=False
        )
        if not page:
            return ids
        ids.extend(UUID(str(n.originator_id)) for n in page)
        position = page[-1].id
