"""Compactions as rows, read from the store's notification log: what dashboards query.

The notification log orders every event of every session; a reader remembers the id of the
last notification it has handled and asks for the next page. Only `CompactionCompleted`
events are read; the decision and any failure before each are looked up in its own session,
so a reader keeps no state between pages but its position.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from abridged.application.service import Sessions
from abridged.application.topics import stored_topics
from abridged.domain.errors import SessionError
from abridged.domain.session import Session

__all__ = [
    "CompactionRow",
    "InvalidPageSizeError",
    "compaction_pages",
    "compaction_row",
    "session_ids",
]


COMPLETED_TOPICS = stored_topics(Session.CompactionCompleted)
STARTED_TOPICS = stored_topics(Session.Started)
LOOKBACK = 8
"""Events before a completion that may belong to its compaction (a decision, a failure,
a suppression cannot come between them; a small margin costs nothing)."""


class InvalidPageSizeError(SessionError, ValueError):
    """A page of the notification log must hold at least one notification."""


@attrs.frozen
class CompactionRow:
    """One compaction: where it cut, what it cost, who summarized; a read model's row."""

    notification_id: int
    session_id: UUID
    version: int
    generation: int
    trigger: str
    first_position: int
    last_position: int
    retained_from: int
    messages_summarized: int
    tokens_before: int
    tokens_after: int
    strategy: str
    summarizer: str
    summarizer_input_tokens: int
    summarizer_output_tokens: int
    summary_tokens: int
    fallback: str | None
    occurred_at: datetime


def compaction_row(app: Sessions, notification_id: int, event: Any) -> CompactionRow:
    """The row of one `CompactionCompleted` event, with its decision's trigger."""
    version = event.originator_version
    earlier = list(
        app.events.get(
            event.originator_id, gt=max(0, version - LOOKBACK), lte=version - 1, desc=True
        )
    )
    trigger, fallback = "unknown", None
    for before in earlier:
        if isinstance(before, Session.CompactionFailed) and fallback is None:
            fallback = before.fallback
        if isinstance(before, Session.CompactionThresholdHit):
            trigger = before.decision.trigger
            break
        if isinstance(before, Session.CompactionCompleted):
            break
    summary = event.summary
    return CompactionRow(
        notification_id=notification_id,
        session_id=event.originator_id,
        version=version,
        generation=event.generation,
        trigger=trigger,
        first_position=summary.first_position,
        last_position=summary.last_position,
        retained_from=event.retained_from,
        messages_summarized=event.messages_summarized,
        tokens_before=event.tokens_before,
        tokens_after=event.tokens_after,
        strategy=event.strategy,
        summarizer=event.summarizer,
        summarizer_input_tokens=event.summarizer_input_tokens,
        summarizer_output_tokens=event.summarizer_output_tokens,
        summary_tokens=summary.tokens,
        fallback=fallback,
        occurred_at=event.timestamp,
    )


def compaction_pages(
    app: Sessions, after: int, page_size: int = 100
) -> Iterator[tuple[int, Sequence[CompactionRow]]]:
    """Pages of compaction rows after notification id `after`, oldest first.

    Each page comes with the notification id to resume from once its rows are stored; a page
    may be empty when the log has moved on with other events only."""
    if page_size < 1:
        raise InvalidPageSizeError(f"page_size must be at least 1, not {page_size}")
    position = after
    while True:
        notifications = app.recorder.select_notifications(
            start=position, limit=page_size, topics=COMPLETED_TOPICS, inclusive_of_start=False
        )
        if not notifications:
            return
        rows = [compaction_row(app, n.id, app.mapper.to_domain_event(n)) for n in notifications]
        position = notifications[-1].id
        yield position, rows


def session_ids(app: Sessions) -> list[UUID]:
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
