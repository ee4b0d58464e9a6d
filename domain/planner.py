"""The planner: whether to compact now, where to cut, when not to; what to prune.

Pure functions of a session's state and settings, so every decision recorded in a
`CompactionThresholdHit` can be re-derived from the event stream by replaying it.

Where a cut may fall is `abridged.domain.cuts`.
"""

from __future__ import annotations

from typing import Protocol, cast

import attrs

from abridged.domain.context import (
    ContextView,
    calibrated,
    carried_system,
    raw_estimate,
    turn_context,
)
from abridged.domain.cuts import (
    beside_tail,
    carried_sums,
    cut_points,
    overflow_error,
    suffix_sums,
    tail_first,
    tail_holds_all,
    turns_from,
)
from abridged.domain.errors import ContextOverflowError
from abridged.domain.guards import GuardedView, guards_holding
from abridged.domain.indexes import IndexedView, has_indexes, protected_index
from abridged.domain.messages import Message, Role
from abridged.domain.pruning import (
    PAST_THRESHOLD,
    PrunePlan,
    plan_pruning,
)
from abridged.domain.pruning import plan_fit as pruning_plan_fit
from abridged.domain.thinking_plan import bound, holds_prefix
from abridged.domain.truncation import shown
from abridged.domain.vocabulary import Trigger


@attrs.frozen
class Decision:
    """One compaction choice: its inputs and its outputs. Re-derivable from the events."""

    trigger: Trigger
    estimate: int
    window: int
    budget: int
    threshold: int
    floor: int
    reserved_output: int
    settings_fingerprint: str
    retained_from: int
    """First position kept verbatim; everything before it is summarized."""
    turns_kept: int
    resummarize: bool
    """Whether the existing chunks are folded with the new range into one chunk."""
    summary_max_tokens: int
    reason: str
    extra_tokens: int = 0
    """Tokens of the per-turn content the decision counted (not stored in the history)."""
    ledger_max_tokens: int = 0
    """The most the facts ledger may take after this compaction (0: the ledger is off)."""


@attrs.frozen
class CompactionOutcome:
    """What one compaction changed, as recorded in its `CompactionCompleted`."""

    generation: int
    messages_summarized: int
    tokens_before: int
    tokens_after: int


class PlannerView(ContextView, GuardedView, Protocol):
    """What the planner reads of a session (the `Session` aggregate is one): the context, what
    the loop guards read, and whether it has had thinking."""

    @property
    def thinking_seen(self) -> bool: ...


def decide(
    view: PlannerView, trigger: Trigger, extra_tokens: int = 0, *, cut_loop: bool = True
) -> Decision | None:
    """Whether to compact now and where to cut; `ContextOverflowError` if nothing fits. An
    open loop keeps the reply that starts its thinking while that fits, else (`cut_loop`) it
    is cut like any other and sent without thinking (`Context.thinking_paused`).
    `extra_tokens` are per-turn content's. Only a `threshold` trigger may decide not to
    compact because the estimate is below the threshold, and a `background` one below the
    earlier mark (`background_threshold_ratio`; the threshold, when it is not set: a
    compaction started in the background on request, `compact_soon`, or one a request put
    off while it still fits, `SessionsOptions.defer_compaction`).
    """
    limits = view.limits
    estimate = calibrated(view, raw_estimate(view) + extra_tokens)
    if trigger == "threshold" and estimate < limits.threshold:
        return None
    if trigger in ("threshold", "background") and estimate <= limits.budget and holds_prefix(view):
        return None
    if trigger == "background":
        mark = limits.background_threshold
        if estimate < (limits.threshold if mark is None else mark):
            return None
    entries = view.entries
    considered = entries
    if trigger == "background" and entries and entries[-1].message.role is Role.ASSISTANT:
        # Decided after a reply: the exchange it answers stays with it, as it would at the
        # next request, so the cut is one that request could have made.
        considered = entries[:-1]
    cuts = cut_points(considered, thinking_led=view.thinking_seen)
    try:
        return _cut(view, trigger, estimate, cuts, extra_tokens)
    except ContextOverflowError:
        if not cut_loop or (loose := cut_points(considered)) == cuts:
            raise
        return _cut(view, trigger, estimate, loose, extra_tokens)


def _cut(
    view: PlannerView, trigger: Trigger, estimate: int, cuts: list[int], extra_tokens: int
) -> Decision | None:
    limits = view.limits
    settings = view.settings
    entries = view.entries
    if not cuts:
        if estimate > limits.budget:
            raise overflow_error(view.limits, view.system_tokens + view.tools_tokens, entries)
        return None
    fixed, resummarize = beside_tail(view, extra_tokens)
    # Room for the ledger: its whole share when the tail is chosen by the soft limits; when
    # only the minimal tail fits, what is left of the budget, even below what it holds now (the
    # ledger then drops its lowest-priority entries, named in the event) rather than sending
    # nothing.
    ledger_room = max(limits.ledger_tokens, view.ledger_tokens) if limits.ledger_tokens else 0
    suffix = suffix_sums(entries, turn_context(view))
    carry = carried_sums(entries, carried_system(view))
    soft = min(limits.retained_tokens + fixed + ledger_room, limits.threshold, limits.target)

    def fits(index: int, limit: int, ledger: int | None = None) -> bool:
        room = ledger_room if ledger is None else ledger
        return calibrated(view, fixed + room + suffix[index] + carry[index]) <= limit

    def choose(cut: int, turns: int, reason: str, ledger: int | None = None) -> Decision:
        return Decision(
            trigger=trigger,
            estimate=estimate,
            window=limits.window,
            budget=limits.budget,
            threshold=limits.threshold,
            floor=settings.threshold_floor_tokens,
            reserved_output=limits.reserved_output,
            settings_fingerprint=settings.fingerprint,
            retained_from=entries[cut].position,
            turns_kept=turns,
            resummarize=resummarize,
            summary_max_tokens=limits.summary_tokens,
            reason=reason,
            extra_tokens=extra_tokens,
            ledger_max_tokens=ledger_room if ledger is None else ledger,
        )

    turn_starts = [k for k in cuts if entries[k].message.is_user_prompt]
    if settings.keep_recent_share is not None:
        if (
            settings.spare_recent_tail
            and trigger in ("threshold", "background")
            and estimate <= limits.budget
            and tail_holds_all(view, suffix)
        ):
            # Past the threshold only because of what no compaction shortens (the system
            # prompt, the ledger): the request fits, and a cut could only summarize the
            # turns the rule keeps, freeing next to nothing for a rewritten cache.
            return None
        # The recent tail first, the ledger in what is left (docs/settings.md#sharing-the-budget).
        cut, left, reason = tail_first(view, cuts, suffix, carry, fixed)
        if left <= 0:
            if trigger == "threshold" and estimate <= limits.budget:
                return None  # nothing a compaction can free would fit: send it as it is
            raise overflow_error(view.limits, view.system_tokens + view.tools_tokens, entries[cut:])
        # The ledger takes its share of what the tail leaves: when they do not both fit, the
        # ledger drops entries (by priority, named in its event), never the tail.
        ledger = min(limits.ledger_tokens, int(left / view.calibration))
        return choose(cut, turns_from(entries, cut), reason, ledger)
    if settings.keep_recent_tokens is not None:
        for cut in cuts:
            if fits(cut, soft):
                return choose(cut, turns_from(entries, cut), "recent tokens")
    else:
        for turns in range(min(settings.keep_recent_turns, len(turn_starts)), 0, -1):
            cut = turn_starts[-turns]
            if fits(cut, soft):
                return choose(cut, turns, "turns")
        inside = [k for k in cuts if not turn_starts or k > turn_starts[-1]] or cuts[-1:]
        for cut in inside:
            if fits(cut, soft):
                return choose(cut, 0, "inside current turn")
    cut = cuts[-1]
    if fits(cut, limits.budget):
        return choose(cut, turns_from(entries, cut), "minimal tail")
    left = int(limits.budget / view.calibration) - fixed - suffix[cut] - carry[cut]
    if ledger_room and left > 0:
        return choose(cut, turns_from(entries, cut), "minimal tail, smaller ledger", left)
    raise overflow_error(view.limits, view.system_tokens + view.tools_tokens, entries[cut:])


def held_back(view: PlannerView, estimate: int) -> bool:
    """Whether the cooldown or the growth guard would hold a threshold compaction back."""
    since = view.message_count - view.last_compaction_at
    if view.last_compaction_at >= 0 and since < view.settings.cooldown_messages:
        return True
    left = view.compacted_to
    growth = int(view.settings.min_growth_share * view.limits.budget)
    return left is not None and estimate < left + growth


def background_due(view: PlannerView, estimate: int | None = None) -> bool:
    """Whether the estimate has crossed the earlier mark of a background compaction."""
    mark = view.limits.background_threshold
    if mark is None:
        return False
    if estimate is None:
        estimate = calibrated(view, raw_estimate(view))
    return estimate >= mark


def suppression(view: PlannerView, decision: Decision) -> str | None:
    """Why a threshold (or background) compaction should not run now (loop guards), or
    `None`. Never suppresses when the request would not fit the budget otherwise.

    Several guards may hold at once, and which comes first can depend on the estimate, which
    a downgrade later in the same prepare moves: the reason last recorded is given again
    while its guard holds, so a prepare retried with nothing new records nothing."""
    reasons = guards_holding(view, decision)
    if not reasons:
        return None
    recorded = getattr(view, "suppressed", None)
    return recorded if recorded in reasons else reasons[0]


def plan_prune(view: PlannerView, extra_tokens: int = 0) -> PrunePlan | None:
    """Where the prune boundary should move now, or `None`.

    With the session's indexes (`IndexedView`), a prepare that will not prune costs a binary
    search and a subtraction, not a walk over the retained tail."""
    limits = view.limits
    estimate = calibrated(view, raw_estimate(view) + extra_tokens)
    # Past the threshold the boundary moves whatever it saves: with the compaction when one
    # can run (`defer_to_compaction`), else to make the request fit. While a guard holds the
    # compaction back, a prune must be worth a move of its own.
    past = estimate >= limits.threshold and (
        estimate > limits.budget or not held_back(view, estimate)
    )
    if bound(view) and (not past or (estimate <= limits.budget and holds_prefix(view))):
        # Between compactions a request to a model with bound thinking only appends.
        return None
    if not past and whole_until_threshold(view):
        return None
    if not has_indexes(view):
        return plan_pruning(view.entries, view.prune_boundary, limits, past_threshold=past)
    index = cast(IndexedView, view)
    settings = limits.settings
    if settings.tool_output_mode == "keep_all" and not past:
        return None
    protect = protected_index(index.output_sums, limits.prune_protect_tokens)
    if not past and settings.tool_output_mode != "keep_none" and view.entries:
        start = max(1, view.prune_boundary - view.entries[0].position)
        saving = index.saving_sums[protect] - index.saving_sums[start] if start < protect else 0
        if saving < limits.prune_min_tokens:
            return None
    return plan_pruning(
        view.entries, view.prune_boundary, limits, past_threshold=past, protect_index=protect
    )


def whole_until_threshold(view: PlannerView) -> bool:
    """Whether `auto` leaves the old outputs of a session below its threshold as they are:
    until its first compaction (or a summary it started from), a session may never reach the
    threshold, and a prune would then have cost content and a rewrite of the cached prefix
    for nothing. Past it the session is long: a prune puts the next compaction off."""
    settings = view.limits.settings
    return (
        settings.whole_until_threshold
        and settings.tool_output_mode == "auto"
        and view.last_compaction_at < 0
        and not view.summaries
    )


def defer_to_compaction(plan: PrunePlan | None) -> bool:
    """Whether `plan`, a prune past the threshold, should wait for the compaction due now.

    A prune past the threshold used to run first and could bring the request just below the
    threshold, putting the compaction off: the context then stayed near the threshold, and
    each new output meant another prune, each one a move of the cached prefix, rewriting
    everything after the pruned output at the cache-write price. A compaction brings the
    context down to its target instead, and the outputs left in the retained tail are
    pruned with it (`plan_prune_with_compaction`): one move for both. When no compaction runs
    after all, or none fits without the prune, the caller runs the prune (`Sessions`)."""
    return plan is not None and plan.reason == PAST_THRESHOLD


def plan_prune_with_compaction(view: PlannerView) -> PrunePlan | None:
    """The prune that goes with a compaction just recorded: every output of the retained
    tail outside the protected window, since the cached prefix has moved anyway."""
    limits = view.limits
    return plan_pruning(
        view.entries, view.prune_boundary, limits, past_threshold=True, with_compaction=True
    )


def plan_fit(view: PlannerView) -> PrunePlan | None:
    """The prune of last resort, for a request that fits no other way (`pruning.plan_fit`)."""
    return pruning_plan_fit(view.entries, view.prune_boundary, view.limits)


def messages_to_summarize(view: PlannerView, position: int) -> tuple[Message, ...]:
    """The retained messages a compaction up to `position` would summarize.

    Pruned outputs come whole (what pruning hid from the model is what the summary should
    keep), with append-time truncation, when that fits the session's budget; otherwise
    the messages come as requests show them, so the summarizer's input stays bounded.
    """
    entries = [e for e in view.entries if e.position < position]
    if sum(e.tokens for e in entries) <= view.limits.budget:
        return tuple(shown(e.message, e.truncations) for e in entries)
    return tuple(e.shown_message for e in entries)
