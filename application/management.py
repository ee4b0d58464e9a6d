"""The read side a host needs to manage sessions: list them, their totals, their compactions.

Read from the events themselves, so it works on every store and for sessions written before
this module existed. `list_sessions` reads the store's notification log, selecting only the
`Started` and `Deleted` events (one row per session, by topic, in the store's own query), so
its cost grows with the number of sessions, not with their length.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs
from eventsourcing.application import Application
from eventsourcing.domain import Aggregate

from abridged.application.cache_misses import by_cause, cache_misses

# The service reads a session's compactions through this module, with its other totals.
from abridged.application.compactions import CompactionRecord, compaction_records
from abridged.application.topics import stored_topics
from abridged.domain.errors import SessionError
from abridged.domain.metadata import checked_metadata, checked_tags
from abridged.domain.session import Session
from abridged.domain.usage import moving_calibration, observed_ratio

__all__ = [
    "CompactionRecord",
    "SessionInfo",
    "SessionPage",
    "SessionStats",
    "compaction_records",
    "derived_sessions",
    "list_sessions",
    "session_stats",
]

MAX_PAGE = 1_000
"""The most sessions one `list_sessions` page holds."""
_BATCH = 500


@attrs.frozen
class SessionInfo:
    """One listed session: what it was started with, and when it was last written."""

    id: UUID
    model: str
    created_at: datetime
    last_activity: datetime
    version: int
    """How many events the session has."""
    metadata: Mapping[str, str]
    tags: tuple[str, ...]


@attrs.frozen
class SessionPage:
    """One page of `list_sessions`, newest first; `next_cursor` is None on the last page."""

    sessions: tuple[SessionInfo, ...]
    next_cursor: str | None


@attrs.frozen
class SessionStats:
    """Totals of one session's history."""

    messages: int
    user_messages: int
    assistant_messages: int
    requests: int
    """Model replies recorded with the provider's usage: requests the provider billed."""
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    compactions: int
    compactions_by_trigger: Mapping[str, int]
    compaction_failures: int
    suppressions: int
    pruned_outputs: int
    overflows: int
    summarizer_input_tokens: int
    summarizer_output_tokens: int
    estimate_error_mean: float | None
    """Mean of |reported − estimated| / estimated over the replies recorded with usage (the
    estimate as calibrated when the request was made); None without such replies."""
    estimate_error_last: float | None
    """The signed error of the last such reply: positive when the provider counted more."""
    started_at: datetime
    last_activity: datetime
    cache_misses_by_cause: Mapping[str, int] = attrs.field(factory=dict)
    """Replies whose request missed the prompt cache, by the cause the API's cache
    diagnostics named (`abridged.application.cache_misses`)."""
    unplanned_cache_misses: int = 0
    """Of those, the misses no change abridged recorded explains."""
    withdrawn_messages: int = 0
    """Messages taken out of the view by `withdraw_turn` (counted in `messages`: history
    keeps them)."""

    @property
    def prompt_tokens(self) -> int:
        """Every input token the provider reported, cached or not."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


def _notifications(app: Application[UUID], topics: Sequence[str]) -> Iterator[Any]:
    start = 1
    while True:
        batch = app.recorder.select_notifications(start, _BATCH, topics=topics)
        yield from batch
        if len(batch) < _BATCH:
            return
        start = batch[-1].id + 1


def _cursor(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        position = int(value)
    except ValueError:
        position = 0
    if position <= 0:
        raise SessionError(f"not a cursor from list_sessions: {value!r}")
    return position


def list_sessions(
    app: Application[UUID],
    *,
    metadata: Mapping[str, str] | None = None,
    tags: Iterable[str] = (),
    limit: int = 50,
    cursor: str | None = None,
    deleted: bool = False,
) -> SessionPage:
    """Sessions, newest first, filtered by metadata (every key with its value) and tags
    (every one); deleted sessions are left out unless `deleted` (an erasure looks for them
    too: they still hold their events). See `Sessions.list_sessions`."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise SessionError(f"limit must be between 1 and {MAX_PAGE}, got {limit!r}")
    wanted = checked_metadata(metadata)
    wanted_tags = set(checked_tags(tags))
    before = _cursor(cursor)
    started: list[tuple[int, Any]] = []
    gone: set[UUID] = set()
    topics = stored_topics(Session.Started) + stored_topics(Session.Deleted)
    deleted_topics = set(stored_topics(Session.Deleted))
    for notification in _notifications(app, topics):
        if notification.topic in deleted_topics:
            gone.add(notification.originator_id)
        elif before is None or notification.id < before:
            started.append((notification.id, notification))
    found: list[tuple[int, Any]] = []
    for position, notification in reversed(started):
        if notification.originator_id in gone and not deleted:
            continue
        event = app.mapper.to_domain_event(notification)
        event_metadata: Mapping[str, str] = getattr(event, "metadata", {}) or {}
        if any(event_metadata.get(key) != value for key, value in wanted.items()):
            continue
        if not wanted_tags <= set(getattr(event, "tags", ()) or ()):
            continue
        found.append((position, event))
        if len(found) > limit:
            break
    page = found[:limit]
    next_cursor = str(page[-1][0]) if len(found) > limit else None
    return SessionPage(tuple(_info(app, event) for _, event in page), next_cursor)


def derived_sessions(app: Application[UUID], session_id: UUID) -> tuple[UUID, ...]:
    """The sessions started from `session_id` (their `Started` names it as parent), and from
    those in turn, in the order they were started. See `Sessions.derived_sessions`."""
    children: dict[UUID, list[UUID]] = {}
    for notification in _notifications(app, stored_topics(Session.Started)):
        event = app.mapper.to_domain_event(notification)
        parent = getattr(event, "parent_id", None)
        if parent is not None:
            children.setdefault(parent, []).append(event.originator_id)
    found: list[UUID] = []
    waiting = [session_id]
    while waiting:
        for child in children.get(waiting.pop(0), ()):
            if child not in found and child != session_id:
                found.append(child)
                waiting.append(child)
    return tuple(found)


def _info(app: Application[UUID], started: Any) -> SessionInfo:
    last: Any = next(iter(app.events.get(started.originator_id, desc=True, limit=1)), started)
    return SessionInfo(
        id=started.originator_id,
        model=started.model,
        created_at=started.timestamp,
        last_activity=last.timestamp,
        version=last.originator_version,
        metadata=dict(getattr(started, "metadata", {}) or {}),
        tags=tuple(getattr(started, "tags", ()) or ()),
    )


_USAGE = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_COUNTED = (
    "messages",
    "user_messages",
    "assistant_messages",
    "requests",
    *_USAGE,
    "compaction_failures",
    "suppressions",
    "pruned_outputs",
    "overflows",
    "withdrawn_messages",
)
"""The `SessionStats` fields that are counts of events or sums of their figures."""


def session_stats(events: Sequence[Aggregate.Event]) -> SessionStats:
    """The totals of a session's events (oldest first, from `Sessions.history`)."""
    counts: Counter[str] = Counter()
    api_compactions = 0
    calibration = 1.0
    errors: list[float] = []
    for event in events:
        if isinstance(event, Session.MessageAppended):
            counts["messages"] += 1
            counts[f"{event.message.role.value}_messages"] += 1
            if event.usage is not None:
                counts["requests"] += 1
                for name in _USAGE:
                    counts[name] += getattr(event.usage, name)
                reported = event.usage.prompt_tokens
                if event.request_estimate and reported and event.calibrates:
                    predicted = math.ceil(event.request_estimate * calibration)
                    errors.append((reported - predicted) / predicted)
                    calibration = moving_calibration(calibration, reported, event.request_estimate)
        elif isinstance(event, Session.OverflowReported):
            counts["overflows"] += 1
            if event.provider_tokens and event.estimate:
                observed = observed_ratio(event.provider_tokens, event.estimate)
                calibration = max(calibration, round(observed, 6))
        elif isinstance(event, Session.ApiCompacted):
            api_compactions += 1  # the API compacted at its own threshold
        elif isinstance(event, Session.CompactionFailed):
            counts["compaction_failures"] += 1
        elif isinstance(event, Session.CompactionSuppressed):
            counts["suppressions"] += 1
        elif isinstance(event, Session.ToolsPruned):
            counts["pruned_outputs"] += len(event.outputs)
        elif isinstance(event, Session.TurnWithdrawn):
            counts["withdrawn_messages"] += event.count
    compactions = compaction_records(events)
    by_trigger = Counter(c.trigger for c in compactions)
    if api_compactions:
        by_trigger["api"] = api_compactions
    misses = cache_misses(events)
    return SessionStats(
        **{name: counts[name] for name in _COUNTED},
        compactions=sum(by_trigger.values()),
        compactions_by_trigger=dict(by_trigger),
        summarizer_input_tokens=sum(c.summarizer_input_tokens for c in compactions),
        summarizer_output_tokens=sum(c.summarizer_output_tokens for c in compactions),
        estimate_error_mean=(sum(abs(e) for e in errors) / len(errors)) if errors else None,
        estimate_error_last=errors[-1] if errors else None,
        started_at=events[0].timestamp,
        last_activity=events[-1].timestamp,
        cache_misses_by_cause=by_cause(misses),
        unplanned_cache_misses=sum(1 for m in misses if m.planned is False),
    )
