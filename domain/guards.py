"""The loop guards that hold a threshold or background compaction back: a cooldown after the
last compaction, the growth the context must show since, and a compaction that could not
reduce enough."""

from __future__ import annotations

from typing import Protocol

from abridged.domain.limits import Limits
from abridged.domain.settings import CompactionSettings


class GuardedDecision(Protocol):
    """What the guards read of a compaction decision (`planner.Decision` is one)."""

    @property
    def trigger(self) -> str: ...
    @property
    def estimate(self) -> int: ...
    @property
    def budget(self) -> int: ...


class GuardedView(Protocol):
    """What the guards read of a session (`planner.PlannerView` is one)."""

    @property
    def settings(self) -> CompactionSettings: ...
    @property
    def limits(self) -> Limits: ...
    @property
    def message_count(self) -> int: ...
    @property
    def last_compaction_at(self) -> int: ...
    @property
    def stalled_estimate(self) -> int | None: ...
    @property
    def compacted_to(self) -> int | None: ...


def guards_holding(view: GuardedView, decision: GuardedDecision) -> list[str]:
    """The reasons of every loop guard that holds the compaction back, the first foremost."""
    if decision.trigger not in ("threshold", "background") or decision.estimate > decision.budget:
        return []
    reasons: list[str] = []
    since = view.message_count - view.last_compaction_at
    if view.last_compaction_at >= 0 and since < view.settings.cooldown_messages:
        reasons.append(f"the last compaction ran {since} message(s) ago")
    growth = int(view.settings.min_growth_share * view.limits.budget)
    left = view.compacted_to
    if left is not None and decision.estimate < left + growth:
        # Each compaction rewrites the cached context after the system prompt: one that frees
        # little costs more than it saves, so the context must have grown enough first.
        reasons.append(
            f"the last compaction left {left:,} tokens; waiting until the context has grown "
            f"by {growth:,}"
        )
    stalled = view.stalled_estimate
    min_reduction = view.limits.min_reduction
    if stalled is not None and decision.estimate < stalled + min_reduction:
        reasons.append(
            "the last compaction could not reduce the context by "
            f"{min_reduction:,} tokens; waiting for it to grow"
        )
    return reasons
