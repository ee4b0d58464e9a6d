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

The thinking a session shows at a switch was written by the model it is leaving: a block an
earlier model wrote stayed only if that model could read it (the same rule at the earlier
switch), so it is taken as the leaving model's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from abridged.domain.capabilities import ModelCapabilities, capabilities_for
from abridged.domain.planner import IndexedView, PlannerView, has_indexes
from abridged.domain.pruning import DowngradedThinking, downgrades_of

__all__ = ["SWITCH_REASON", "switch_reason", "unreadable_thinking"]

SWITCH_REASON = "the model changed from "
"""How the reason of a downgrade made by a model switch begins."""


def switch_reason(producer: str, reader: str, policy: str) -> str:
    """The recorded reason of a switch's downgrade: both models, and the reasoning policy."""
    return (
        f"{SWITCH_REASON}{producer} to {reader}, which does not read {producer}'s thinking; "
        f"policy {policy}"
    )


def unreadable_thinking(
    view: PlannerView,
    producer: str,
    reader: str,
    table: Mapping[str, ModelCapabilities] | None = None,
) -> tuple[DowngradedThinking, ...]:
    """The thinking blocks `view` shows that `reader` cannot read, all written by `producer`
    (the model the session leaves), as the reasoning policy downgrades them; none when the
    reader reads the producer's thinking. `table` holds the host's capabilities rows."""
    if not view.thinking_seen or producer == reader:
        return ()
    if capabilities_for(reader, table).reads(reader, producer, table):
        return ()
    if not has_indexes(view):
        return downgrades_of(view.entries, view.settings)
    shown = cast(IndexedView, view).thinking_positions
    first = view.entries[0].position if view.entries else 0
    return downgrades_of([view.entries[p - first] for p in shown], view.settings)
