"""The checks of an audit: each recorded decision against what the planners re-derive.

`DecisionChecks` holds the replay's running state (the decision under way, whether this
preparation pruned or compacted) and one check per kind of decision: threshold hit, failure,
the API's own compaction, prune, reasoning downgrade, suppression, thinking bound to its
prefix. `abridged.application.auditing` runs the replay and reads the results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from abridged.application.chain import CORRELATION_KEY
from abridged.domain import planner, thinking_plan
from abridged.domain.capabilities import ModelCapabilities
from abridged.domain.context import calibrated, raw_estimate
from abridged.domain.cuts import LEGACY_REASONS
from abridged.domain.errors import ContextOverflowError, TurnNotWithdrawableError
from abridged.domain.messages import RedactedThinkingBlock, ThinkingBlock
from abridged.domain.model_switch import (
    SWITCH_REASON,
    switch_reason_of,
    unreadable_producers,
    unreadable_thinking,
    unreadable_writers,
)
from abridged.domain.planner import Decision
from abridged.domain.preparation import plan_preparation, prune_after
from abridged.domain.pruning import TO_FIT, DowngradedThinking, plan_pruning
from abridged.domain.reply_shapes import leads_with_compaction
from abridged.domain.session import Session
from abridged.domain.vocabulary import Trigger

__all__ = ["DecisionChecks", "Finding", "differences", "inferred_extra"]


@attrs.frozen
class Finding:
    """One recorded decision, checked: whether re-deriving it gives what the event says."""

    version: int
    event: str
    matches: bool
    detail: str
    """What was checked; on a mismatch, what was recorded and what was re-derived."""
    timestamp: datetime
    correlation_id: str | None = None
    """The host's correlation id the event was stored with, if any."""


def differences(recorded: Any, derived: Any) -> str:
    """The attrs fields on which two values differ, as `name: recorded != derived`."""
    if not attrs.has(type(recorded)) or type(recorded) is not type(derived):
        return f"recorded {recorded!r}, re-derived {derived!r}"
    parts = [
        f"{field.name}: recorded {getattr(recorded, field.name)!r}, "
        f"re-derived {getattr(derived, field.name)!r}"
        for field in attrs.fields(type(recorded))
        if getattr(recorded, field.name) != getattr(derived, field.name)
    ]
    return "; ".join(parts)


def relabelled(recorded: Decision, derived: Decision) -> bool:
    """Whether two decisions differ only by a reason renamed since `recorded` was stored
    (`abridged.domain.cuts.LEGACY_REASONS`): the same cut, named as it was then."""
    legacy = LEGACY_REASONS.get(derived.reason)
    return legacy == recorded.reason and attrs.evolve(derived, reason=legacy) == recorded


def inferred_extra(state: Session, estimate: int) -> int | None:
    """The per-turn content tokens that make the state's estimate equal `estimate`. Per-turn
    content is sent but not stored; a suppression records only the estimate that included
    it, so its size is recovered by inverting the (monotone) calibrated estimate."""
    raw = raw_estimate(state)
    if calibrated(state, raw) > estimate:
        return None
    low, high = 0, max(0, estimate)
    while low < high:
        middle = (low + high) // 2
        if calibrated(state, raw + middle) < estimate:
            low = middle + 1
        else:
            high = middle
    return low if calibrated(state, raw + low) == estimate else None


def decided(state: Session, trigger: Trigger, extra: int) -> tuple[Decision | None, str | None]:
    """The decision and the loop guard's verdict a preparation reaches on `state` (the same
    policy the service runs: `abridged.domain.preparation`), or, for a compaction started
    elsewhere (manual, overflow, background), the planner's; raises `ContextOverflowError`
    when no request fits."""
    if trigger in ("threshold", "requested"):
        plan = plan_preparation(state, extra, trigger=trigger, pruned=True)
        if plan.overflow is None:
            return plan.decision, plan.suppressed
        # Nothing else fitted: the last resort, a cut inside an open loop (or the error).
    decision = planner.decide(state, trigger, extra)
    return decision, planner.suppression(state, decision) if decision is not None else None


class DecisionChecks:
    """The running state of one replay, and the check of each kind of decision."""

    def __init__(
        self, events: Sequence[Any], capabilities: Mapping[str, ModelCapabilities] | None = None
    ) -> None:
        self.events = events
        self.findings: list[Finding] = []
        self.decision: Decision | None = None
        self.background: Decision | None = None  # ended later, other events in between
        self.fallback: str | None = None
        self.pruned = False
        self.compacted: int | None = None
        # A background compaction just ended, or a message came since: the next prune is not its.
        self.background_applied = self.behind = False
        self.produced: dict[int, int] = {}
        """The prefix revision each reply with thinking was produced under, by position."""
        self.capabilities = dict(capabilities or {})
        self.switch: tuple[str, str] | None = None
        """The models of a switch whose unreadable thinking has not been seen leaving yet."""
        self.moment = False
        """Whether the current preparation has pruned, compacted or been cancelled by a hook:
        the moments reasoning is downgraded at, so the cached prefix breaks once."""

    def found(self, event: Any, matches: bool, detail: str) -> None:
        self.findings.append(
            Finding(
                event.originator_version,
                type(event).__name__,
                matches,
                detail,
                event.timestamp,
                getattr(event, CORRELATION_KEY, None),
            )
        )

    # Thinking bound to its prefix.

    def check_binding(self, event: Session.MessageAppended, state: Session) -> None:
        """On a model that binds thinking to its prefix, the request a reply answers held
        only thinking produced under the prefix it had: the revision each shown block was
        recorded at is the revision the reply records."""
        revision = event.prefix_revision
        if revision is not None and state.thinking_bound:
            stale = [
                (position, self.produced[position])
                for position in state.thinking_positions
                if self.produced.get(position, revision) != revision
            ]
            if revision != state.prefix_revision or stale:
                # Only a mismatch is listed: every reply of such a session is checked.
                self.found(
                    event,
                    False,
                    f"prefix revision recorded {revision}, replayed {state.prefix_revision}; "
                    "thinking sent under a changed prefix: "
                    + (", ".join(f"message {p + 1} (revision {r})" for p, r in stale) or "none"),
                )
        if revision is not None and any(
            isinstance(b, ThinkingBlock | RedactedThinkingBlock) for b in event.message.content
        ):
            self.produced[state.message_count] = revision

    def carry_binding(self, event: Session.CompactionCompleted, state: Session) -> None:
        """The API's block written over the exact prefix at a revision keeps the thinking
        produced under it valid under the revision the compaction leaves."""
        chained = event.summary.chained_revision
        if chained is None:
            return
        if not state.prefix_revision - 1 <= chained <= state.prefix_revision:
            # Only the ledger's update may come between the view it summarized and the event.
            self.found(
                event,
                False,
                f"the API's block records revision {chained}, the view before it stood at "
                f"{state.prefix_revision}",
            )
            return
        after = state.prefix_revision + 1
        for position, revision in self.produced.items():
            if revision == chained and position >= event.retained_from:
                self.produced[position] = after

    def check_turn_context(self, event: Session.TurnContextShown, state: Session) -> None:
        """Per-turn content is recorded only where the command would record it."""
        problems = state.turn_context_problems(event.position, event.text)
        detail = "; ".join(problems) or f"shown after message {event.position + 1} from now on"
        self.found(event, not problems, detail)

    def check_withdrawn(self, event: Session.TurnWithdrawn, state: Session) -> None:
        """A turn is withdrawn from a user prompt the retained tail holds to the end; the
        positions it frees are taken again by the messages after it."""
        try:
            start = state.withdrawable_from(event.position)
        except TurnNotWithdrawableError as error:
            self.found(event, False, str(error))
            return
        count = state.message_count - start
        self.found(
            event,
            count == event.count,
            f"messages {start + 1} to {state.message_count} withdrawn: {event.reason}"
            if count == event.count
            else f"messages withdrawn: recorded {event.count}, re-derived {count}",
        )
        self.produced = {p: r for p, r in self.produced.items() if p < start}

    # Decisions.

    def check_hit(self, event: Session.CompactionThresholdHit, state: Session) -> None:
        recorded = event.decision
        self.decision, self.fallback = recorded, None
        if recorded.trigger == "background":
            self.background = recorded
        try:
            derived, guard = decided(state, recorded.trigger, recorded.extra_tokens)
        except ContextOverflowError as error:
            self.found(event, False, f"the planner finds no request that fits: {error}")
            return
        if derived is None:
            self.found(event, False, "the planner would not compact here")
            return
        if derived != recorded and not relabelled(recorded, derived):
            self.found(event, False, differences(recorded, derived))
            return
        if guard is not None:
            self.found(event, False, f"a loop guard would have suppressed it: {guard}")
            return
        self.found(
            event,
            True,
            f"{recorded.trigger} decision re-derived: keep from message "
            f"{recorded.retained_from + 1} ({recorded.reason})",
        )

    def check_api_compacted(self, event: Session.ApiCompacted, state: Session) -> None:
        """The API's own compaction: the reply it names starts with a compaction block, and
        the view from it is what the event says."""
        last = state.entries[-1] if state.entries else None
        leads = (
            last is not None
            and last.position == event.position
            and leads_with_compaction(last.message)
        )
        kept = [e for e in state.entries if e.position >= event.position]
        after = calibrated(
            state, raw_estimate(state, [event.summary], kept, sum(e.shown_tokens for e in kept))
        )
        expected = (True, state.estimate(), after, state.generation + 1)
        recorded = (leads, event.tokens_before, event.tokens_after, event.generation)
        self.found(
            event,
            expected == recorded,
            f"the API compacted at message {event.position + 1}"
            if expected == recorded
            else f"recorded (leads, before, after, generation) {recorded}, re-derived {expected}",
        )
        self.compacted = event.generation

    def extra_after(self, index: int) -> int | None:
        """Per-turn content tokens of the preparation that recorded `events[index]`, when
        the decision it went on to make (the next event) recorded them."""
        following = self.events[index + 1] if index + 1 < len(self.events) else None
        if isinstance(following, Session.CompactionThresholdHit):
            return int(following.decision.extra_tokens)
        return None

    def check_pruned(self, index: int, event: Session.ToolsPruned, state: Session) -> None:
        self.pruned = self.moment = True
        extra = self.extra_after(index)
        assumed = ""
        if event.reason == TO_FIT:
            # The last resort: recorded only when no request fitted as the session stood.
            plan = planner.plan_fit(state)
            try:
                planner.decide(state, "threshold", extra or 0, cut_loop=False)
            except ContextOverflowError:
                pass
            else:
                if extra is not None:
                    self.found(event, False, "a request fitted without it")
                    return
                # No decision recorded the request's per-turn content, which may be what
                # made it overflow.
                assumed = " (assuming per-turn content made the request overflow)"
        else:
            # The preparation policy's prune: with a compaction of this preparation (which
            # moved the cached prefix) the retained tail's outputs, else the first step's.
            plan = prune_after(state, self.compacted is not None and not self.behind, extra or 0)
        if (
            (self.compacted is None or self.behind)
            and event.reason != TO_FIT
            and extra is None
            and (plan is None or plan.reason != event.reason)
        ):
            # Unrecorded per-turn content may have put the request past its threshold.
            plan = plan_pruning(
                state.entries, state.prune_boundary, state.limits, past_threshold=True
            )
            assumed = " (assuming per-turn content put the request past its threshold)"
        if plan is None:
            self.found(event, False, "the planner would not prune here")
            return
        problems = []
        if plan.boundary != event.boundary:
            problems.append(f"boundary: recorded {event.boundary}, re-derived {plan.boundary}")
        if plan.reason != event.reason:
            problems.append(f"reason: recorded {event.reason!r}, re-derived {plan.reason!r}")
        if event.strategy != state.settings.prune_strategy:
            problems.append(
                f"strategy: recorded {event.strategy}, settings say {state.settings.prune_strategy}"
            )
        planned = {(o.position, o.block_index): o for o in plan.outputs}
        for output in event.outputs:
            want = planned.get((output.position, output.block_index))
            if want is None:
                problems.append(
                    f"message {output.position + 1} block {output.block_index} "
                    "is not one the planner prunes"
                )
                continue
            same = (
                output.tool_use_id == want.tool_use_id
                and output.tool_name == want.tool_name
                and output.policy == want.policy
                and output.tokens_before == want.tokens_before
                and (output.policy != "prune" or output.text == want.text)
                and output.tokens_after < output.tokens_before
            )
            if not same:
                problems.append(
                    f"message {output.position + 1} block {output.block_index}: "
                    + differences(output, want)
                )
        saved = sum(o.tokens_before - o.tokens_after for o in event.outputs)
        before, after = state.estimate(), calibrated(state, state.raw_estimate() - saved)
        if (event.tokens_before, event.tokens_after) != (before, after):
            problems.append(
                f"tokens: recorded {event.tokens_before} -> {event.tokens_after}, "
                f"re-derived {before} -> {after}"
            )
        self.found(
            event,
            not problems,
            "; ".join(problems)
            or f"boundary {event.boundary}, {len(event.outputs)} output(s): {event.reason}"
            + assumed,
        )

    def check_switch(self, event: Session.MessageAppended, state: Session) -> None:
        """After a switch of model, no thinking the new model cannot read is shown."""
        if self.switch is None:
            return
        producer, reader = self.switch
        self.switch = None
        left = unreadable_thinking(state, producer, reader, self.capabilities)
        if left:
            unread = unreadable_producers(state, producer, reader, self.capabilities)
            names = ", ".join(unreadable_writers(unread))
            self.found(
                event,
                False,
                f"{len(left)} thinking block(s) of {names} still shown to {reader}, which "
                "does not read them: " + ", ".join(f"message {b.position + 1}" for b in left),
            )

    def check_switch_downgrade(self, event: Session.ReasoningDowngraded, state: Session) -> None:
        if self.switch is None:
            self.found(event, False, f"{event.reason}, but no change of model preceded it")
            return
        producer, reader = self.switch
        self.switch = None
        derived = unreadable_thinking(state, producer, reader, self.capabilities)
        reason = switch_reason_of(state, producer, reader, self.capabilities)
        problem = _downgrade_difference(event.blocks, derived)
        if event.reason != reason:
            problem = f"reason: recorded {event.reason!r}, re-derived {reason!r}"
        self.found(event, not problem, problem or f"{len(event.blocks)} thinking block(s) {reason}")

    def check_downgraded(self, event: Session.ReasoningDowngraded, state: Session) -> None:
        if event.reason.startswith(SWITCH_REASON):
            self.check_switch_downgrade(event, state)
            return
        worth = sum(b.tokens_before for b in event.blocks) >= state.limits.prune_min_tokens
        if not (self.moment or worth):
            self.found(
                event,
                False,
                "downgraded without a prune or compaction to batch with, and worth less than "
                f"{state.limits.prune_min_tokens:,} tokens on its own",
            )
            return
        problem = _downgrade_difference(event.blocks, thinking_plan.plan_downgrades(state))
        self.found(
            event, not problem, problem or f"{len(event.blocks)} thinking block(s) {event.reason}"
        )

    def check_suppressed(self, event: Session.CompactionSuppressed, state: Session) -> None:
        extra = inferred_extra(state, event.estimate)
        if extra is None:
            self.found(
                event,
                False,
                f"estimate: recorded {event.estimate}, the replayed state gives "
                f"{state.estimate()} before any per-turn content",
            )
            return
        try:
            decision, reason = decided(state, event.trigger, extra)
        except ContextOverflowError as error:
            self.found(event, False, f"the planner finds no request that fits: {error}")
            return
        if decision is None:
            self.found(event, False, "no compaction was due here")
            return
        if event.reason.startswith("cancelled by a hook"):
            self.moment = True  # a manual compaction still downgrades reasoning
            # A hook's verdict is the host's; the audit checks only that one was due.
            self.found(event, True, f"a compaction was due; {event.reason}")
            return
        self.found(
            event,
            reason == event.reason,
            f"loop guard: {event.reason}"
            if reason == event.reason
            else f"reason: recorded {event.reason!r}, re-derived {reason!r}",
        )


def _downgrade_difference(
    recorded: Sequence[DowngradedThinking], derived: Sequence[DowngradedThinking]
) -> str:
    """How recorded downgrades differ from re-derived ones; empty when they agree."""
    # A summary that would count no fewer tokens than its block is dropped instead (the
    # service counts; the planner cannot): a recorded drop may stand for a planned summary.
    dropped = {(b.position, b.block_index) for b in recorded if b.action == "dropped"}
    planned = [
        (b.position, b.block_index, "dropped", None, b.tokens_before)
        if b.action == "summarized" and (b.position, b.block_index) in dropped
        else (b.position, b.block_index, b.action, b.text, b.tokens_before)
        for b in derived
    ]
    done = [(b.position, b.block_index, b.action, b.text, b.tokens_before) for b in recorded]
    return "" if planned == done else f"blocks: recorded {done!r}, re-derived {planned!r}"
