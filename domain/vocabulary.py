"""The words decisions are recorded in: each a closed set, checked where it enters.

`Literal` aliases rather than Enums: events store them as the plain strings they always were,
so stored sessions keep loading, and a type checker still rejects a misspelt value.
"""

from __future__ import annotations

from typing import Literal, TypeAlias, get_args

Trigger: TypeAlias = Literal["threshold", "manual", "overflow", "requested", "background"]
"""Why a compaction was considered: the estimate crossed the threshold, the caller asked
(`/compact`), the provider rejected a request as too long, it was requested mid-turn, or
the estimate crossed the earlier mark of a compaction off the user's turn."""

CompactionStrategy: TypeAlias = Literal["additive", "resummarize", "update", "hook", "truncate"]
"""How a summary chunk was made: a new chunk, earlier chunks folded in, the running summary
updated, supplied by a hook, or a truncation note when the summarizer failed."""

Fallback: TypeAlias = Literal["truncate", "raise", "dropped"]
"""What a failed compaction did: fell back to truncation (threshold), raised (manual), or
was dropped (a background compaction: the threshold compacts later if it must)."""

SessionOrigin: TypeAlias = Literal["clear", "resume"]
"""How a session linked to a parent began: a fresh thread carrying the parent's summary
(`clear`), or the parent's conversation continued, whole or from its summary (`resume`)."""

ToolOutputMode: TypeAlias = Literal["auto", "keep_all", "keep_none"]
PruneStrategy: TypeAlias = Literal["head-tail", "name-only"]
ToolPolicy: TypeAlias = Literal["prune", "keep", "summarize"]
ReasoningPolicy: TypeAlias = Literal["drop", "summarize"]
ReasoningAction: TypeAlias = Literal["dropped", "summarized"]
SummaryStrategy: TypeAlias = Literal["additive", "update"]


def choices(alias: object) -> tuple[str, ...]:
    """The values a `Literal` alias allows, in the order written."""
    return tuple(str(value) for value in get_args(alias))
