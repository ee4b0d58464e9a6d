"""The preparation policy: what a request's preparation does, in which order.

A request is prepared in these steps, and only in this order:

1. **prune**: old tool outputs shown shorter (`planner.plan_prune`), unless the request is
   past its threshold and a compaction can run: then the prune is **deferred** to it
   (`planner.defer_to_compaction`), so the cached prefix moves once for both;
2. **decide**: whether to compact, and where to cut (`planner.decide`; trigger `requested`
   at the first request of a turn after `request_compaction`, else `threshold`);
3. **fit**: when no retained tail fits as the session stands, the messages shown beyond
   one message's cap (for a larger window, or a prompt shown whole) are reduced, then the
   deferred prune runs, then (the last resort) every output before the last exchange is
   shown by name (`planner.plan_fit`), deciding again after each; when nothing else fits, an
   open tool loop led by thinking is cut inside (`cut_loop`);
4. **suppress**: a loop guard may hold the compaction back (`planner.suppression`);
5. **reduce**: prompts shown whole (`whole_prompts`) that the compaction would summarize are
   shown at one message's cap first (`abridged.domain.whole_prompts`), and steps 1 to 4 are
   planned again on them;
6. **compact**: the summary written and recorded;
7. **prune with compaction**: the retained tail's outputs, since the prefix moved anyway
   (`planner.plan_prune_with_compaction`); with no compaction after all, the deferred prune
   runs alone;
8. **downgrade**: old reasoning dropped or shown as text, at a moment that changed earlier
   content (a prune, a message reduced again, a compaction), or when enough of it piled up
   (`downgrade_moment`). Thinking bound to its prefix leaves the view at such a moment; an
   open loop whose thinking left goes on with thinking off (`Context.thinking_paused`).

`plan_preparation` is that order as a pure function of the session's state: the service runs
what it returns (and asks again after a prune, whose counted effect the decision depends
on), taking the session's compaction lock only when a summary is due, and the audit replays
the same function to re-derive what each preparation recorded.
"""

from __future__ import annotations

import attrs

from abridged.domain import planner
from abridged.domain.errors import ContextOverflowError
from abridged.domain.planner import Decision, PlannerView
from abridged.domain.pruning import PrunePlan
from abridged.domain.vocabulary import Trigger
from abridged.domain.whole_prompts import PromptReduction, plan_prompt_reduction

__all__ = [
    "PreparationPlan",
    "downgrade_moment",
    "plan_preparation",
    "preparation_trigger",
    "prune_after",
]


@attrs.frozen
class PreparationPlan:
    """What a preparation does next, from the session as it stands (see the module)."""

    trigger: Trigger
    prune: PrunePlan | None = None
    """Step 1: the prune to run now; the decision waits for its counted effect."""
    deferred: PrunePlan | None = None
    """Step 1: the prune put off for the compaction due now."""
    decision: Decision | None = None
    """Step 2: the compaction due (none while `prune` is still to run)."""
    overflow: ContextOverflowError | None = None
    """Step 3: no retained tail fits as the session stands; the fit steps run."""
    suppressed: str | None = None
    """Step 4: why a loop guard holds `decision` back."""
    reduce: PromptReduction | None = None
    """Step 5: the prompts shown whole that `decision` would summarize, to be shown at the
    cap first; the steps before are then planned again (`reduced`)."""


def preparation_trigger(requested: bool, turn_ended: bool) -> Trigger:
    """`requested` at the first request of a turn after `request_compaction`, else
    `threshold`."""
    return "requested" if requested and turn_ended else "threshold"


def plan_preparation(
    view: PlannerView,
    extra_tokens: int = 0,
    *,
    trigger: Trigger = "threshold",
    pruned: bool = False,
    reduced: bool = False,
) -> PreparationPlan:
    """Steps 1 to 5 on the session as it stands; `pruned` once the step-1 prune has run (it
    is then not planned again, and the decision is made), `reduced` once step 5's reduction
    has (it is then not planned again)."""
    plan = None if pruned else planner.plan_prune(view, extra_tokens)
    deferred = plan if planner.defer_to_compaction(plan) else None
    if plan is not None and deferred is None:
        return PreparationPlan(trigger, prune=plan)
    try:
        # A loop is cut inside only as step 3's very last resort, after outputs by name.
        decision = planner.decide(view, trigger, extra_tokens, cut_loop=False)
    except ContextOverflowError as error:
        return PreparationPlan(trigger, deferred=deferred, overflow=error)
    suppressed = planner.suppression(view, decision) if decision is not None else None
    reduce = None
    if decision is not None and not suppressed and not reduced:
        reduce = plan_prompt_reduction(view, decision)
    return PreparationPlan(
        trigger, deferred=deferred, decision=decision, suppressed=suppressed, reduce=reduce
    )


def prune_after(view: PlannerView, compacted: bool, extra_tokens: int = 0) -> PrunePlan | None:
    """Step 7: the prune that follows a compaction (every output of the retained tail outside
    the protected window), or, with no compaction after all, the deferred prune alone."""
    if compacted:
        return planner.plan_prune_with_compaction(view)
    return planner.plan_prune(view, extra_tokens)


def downgrade_moment(pruned: bool, compacted: bool) -> bool:
    """Step 8: whether this preparation changed earlier content, the moment reasoning is
    downgraded at (so the cached prefix breaks once); otherwise only enough of it that
    piled up is worth a break of its own."""
    return pruned or compacted
