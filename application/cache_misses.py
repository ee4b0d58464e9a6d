"""Prompt-cache misses the API reported, by cause, and whether abridged planned them.

A reply recorded with cache diagnostics says why the request could not reuse the previous
request's cached prefix (`Usage.cache_miss_reason`). abridged changes the prefix only at
moments it records: a new system prompt, new tools or model, and in the messages a prune, a
compaction or a reasoning downgrade. A miss whose cause none of those events explains is one
abridged did not plan (the host edited something, or the API lost the cache): `stats`,
`report` and `audit` flag it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from abridged.domain.session import Session

PLANNED_BY: Mapping[str, tuple[type[Any], ...]] = {
    "system_changed": (Session.SystemPromptChanged,),
    "tools_changed": (Session.ToolsChanged,),
    "model_changed": (Session.ModelChanged,),
    "messages_changed": (
        Session.ToolsPruned,
        Session.CompactionCompleted,
        Session.ReasoningDowngraded,
        Session.LedgerUpdated,
        Session.TurnWithdrawn,
    ),
}
"""For each cause the diagnostics name, the events that change that part of the prefix."""


@attrs.frozen
class CacheMiss:
    """One reply whose request missed the cache, and why."""

    version: int
    """The version of the `MessageAppended` event that recorded the reply."""
    cause: str
    missed_tokens: int
    planned: bool | None
    """Whether an event since the previous reply explains the cause; `None` for causes that
    say nothing about the prefix (`previous_message_not_found`, `unavailable`, `pending`)."""


def cache_misses(events: Iterable[Any]) -> tuple[CacheMiss, ...]:
    """Every cache miss the replies among `events` (one session's, oldest first) report."""
    misses: list[CacheMiss] = []
    since_reply: list[Any] = []
    for event in events:
        if not isinstance(event, Session.MessageAppended) or event.usage is None:
            since_reply.append(event)
            continue
        cause = event.usage.cache_miss_reason
        if cause is not None:
            planners = PLANNED_BY.get(cause)
            planned = (
                None if planners is None else any(isinstance(e, planners) for e in since_reply)
            )
            misses.append(
                CacheMiss(
                    event.originator_version, cause, event.usage.cache_missed_input_tokens, planned
                )
            )
        since_reply = []
    return tuple(misses)


def by_cause(misses: Iterable[CacheMiss]) -> dict[str, int]:
    """How many misses each cause had."""
    return dict(Counter(m.cause for m in misses))
