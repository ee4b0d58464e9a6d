"""What a change of model does to the thinking a session shows.

A model reads the thinking blocks of its own family, of the families its row names
(`ModelCapabilities.reads_thinking_of`) and of models whose thinking is portable; the API
drops any other block without an error (platform.claude.com/docs/en/build-with-claude/
preserved-thinking). A block the API drops unannounced is worse than one abridged takes out:
the request's estimate counts it, and on a model that binds thinking to its prefix every
later block's prefix silently changes. So when a session moves to a model that cannot read
the previous model's thinking, those blocks leave the view at the switch, recorded as a
`ReasoningDowngraded` whose reason names both models (`switch_reason`), and the audit
re-derives it with the same function.

Each reply records the model that wrote it (`MessageAppended.model`), so a session that went
from A to B (which reads A's thinking) and on to C drops, at the second switch, exactly the
blocks whose writer C cannot read: B's when C reads only A's, and keeps A's. A block whose
writer was not recorded (a reply stored before models were, or appended as a plain message)
is taken as the leaving model's: a block an earlier model wrote stayed only if that model
read it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from abridged.domain.capabilities import ModelCapabilities, capabilities_for
from abridged.domain.context import Entry
from abridged.domain.indexes import IndexedView, has_indexes
from abridged.domain.planner import PlannerView
from abridged.domain.pruning import DowngradedThinking, downgrades_of

__all__ = [
    "SWITCH_REASON",
    "switch_reason",
    "switch_reason_of",
    "unreadable_producers",
    "unreadable_thinking",
    "unreadable_writers",
]

SWITCH_REASON = "the model changed from "
"""How the reason of a downgrade made by a model switch begins."""


def switch_reason(
    leaving: str, reader: str, policy: str, producers: Sequence[str] | None = None
) -> str:
    """The recorded reason of a switch's downgrade: both models, the models whose thinking the
    reader does not read (by default the leaving one), and the reasoning policy."""
    unread = ", ".join(producers or (leaving,))
    return (
        f"{SWITCH_REASON}{leaving} to {reader}, which does not read {unread}'s thinking; "
        f"policy {policy}"
    )


def _shown_thinking(view: PlannerView) -> list[Entry]:
    """The retained messages that show thinking."""
    if not has_indexes(view):
        return list(view.entries)
    shown = cast(IndexedView, view).thinking_positions
    first = view.entries[0].position if view.entries else 0
    return [view.entries[p - first] for p in shown]


def unreadable_producers(
    view: PlannerView,
    leaving: str,
    reader: str,
    table: Mapping[str, ModelCapabilities] | None = None,
) -> dict[int, str]:
    """The writer of each message whose thinking `reader` cannot read, by position: the model
    each reply recorded, else `leaving` (the model the session leaves). `table` holds the
    host's capabilities rows."""
    if not view.thinking_seen or leaving == reader:
        return {}
    recorded = getattr(view, "producer_of", lambda position: None)
    row = capabilities_for(reader, table)
    writers = {e.position: recorded(e.position) or leaving for e in _shown_thinking(view)}
    return {p: w for p, w in writers.items() if not row.reads(reader, w, table)}


def unreadable_thinking(
    view: PlannerView,
    leaving: str,
    reader: str,
    table: Mapping[str, ModelCapabilities] | None = None,
) -> tuple[DowngradedThinking, ...]:
    """The thinking blocks `view` shows that `reader` cannot read (`unreadable_producers`), as
    the reasoning policy downgrades them; none when the reader reads every writer's."""
    unread = unreadable_producers(view, leaving, reader, table)
    if not unread:
        return ()
    entries = [e for e in _shown_thinking(view) if e.position in unread]
    return downgrades_of(entries, view.settings)


def unreadable_writers(unread: Mapping[int, str]) -> tuple[str, ...]:
    """The writers of `unread` (`unreadable_producers`), each once, in the order their blocks
    come."""
    return tuple(dict.fromkeys(unread.values()))


def switch_reason_of(
    view: PlannerView,
    leaving: str,
    reader: str,
    table: Mapping[str, ModelCapabilities] | None = None,
) -> str:
    """The reason a switch from `leaving` to `reader` downgrades what `view` shows with."""
    writers = unreadable_writers(unreadable_producers(view, leaving, reader, table))
    return switch_reason(leaving, reader, view.settings.reasoning_policy, writers)
