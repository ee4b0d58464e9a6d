"""The audit: every recorded decision re-derived from the events before it.

A session's events are replayed in order. Before each decision event is applied, the pure
planners (`abridged.domain.planner`) are asked the same question against the replayed state
and the recorded settings, and the answer is compared with what the event recorded. A
mismatch means the events were altered, or the code that wrote them decided differently from
the code reading them; either way an operator needs to know, naming the event.

With the verdicts come what people read: the session's compactions (the records of
`abridged.application.compactions`, as `Sessions.compactions` returns them), and from the
replay the estimate of every request the model received (each model reply follows one), for
the report's chart.

Why this module is long: one check per kind of decision (threshold hit, compaction, prune,
reasoning downgrade, suppression, failure, overflow, start), each saying what differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, cast
from uuid import UUID

import attrs

from abridged.application.cache_misses import CacheMiss, cache_misses
from abridged.application.chain import CORRELATION_KEY, ChainingMapper, ChainVerdict, verify_chain
from abridged.application.compactions import CompactionRecord, compaction_records
from abridged.application.service import Sessions
from abridged.domain import planner
from abridged.domain.capabilities import ModelCapabilities
from abridged.domain.context import calibrated, leads_with_compaction, raw_estimate
from abridged.domain.errors import ContextOverflowError, SessionError
from abridged.domain.messages import RedactedThinkingBlock, Role, ThinkingBlock
from abridged.domain.model_switch import SWITCH_REASON, switch_reason, unreadable_thinking
from abridged.domain.planner import Decision
from abridged.domain.pruning import TO_FIT, DowngradedThinking, plan_pruning
from abridged.domain.session import Session

__all__ = [
    "Finding",
    "IncompleteHistoryError",
    "RequestPoint",
    "SessionAudit",
    "audit_events",
    "audit_session",
]


class IncompleteHistoryError(SessionError, ValueError):
    """The events given to an audit do not start with the session's `Started` event."""


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


@attrs.frozen
class RequestPoint:
    """A request the model received: the one each recorded model reply answers."""

    number: int
    """1 for the first request."""
    version: int
    """The version of the reply's `MessageAppended`."""
    tokens: int
    """The request's estimate, as the session computed it before sending."""
    window: int
    threshold: int
    budget: int
    input_tokens: int | None
    cache_read_tokens: int | None
    cache_creation_tokens: int | None
    pruned_before: bool
    """Tool outputs were pruned while preparing this request."""
    compacted_before: int | None
    """The generation of a compaction made while preparing this request."""
    timestamp: datetime


@attrs.frozen
class SessionAudit:
    """Everything an audit found for one session."""

    session_id: UUID
    model: str
    events: int
    findings: tuple[Finding, ...]
    compactions: tuple[CompactionRecord, ...]
    requests: tuple[RequestPoint, ...]
    chain: ChainVerdict | None = None
    """The stored events' hash chain, checked (`None`: the audit read no store)."""
    cache_misses: tuple[CacheMiss, ...] = ()
    """The prompt-cache misses the replies' cache diagnostics reported, planned or not."""

    @property
    def mismatches(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if not f.matches)

    @property
    def ok(self) -> bool:
        """Whether every recorded decision is the one the replayed state implies, and no
        stored event was found altered, missing or out of place."""
        return not self.mismatches and (self.chain is None or self.chain.ok)


def audit_session(app: Sessions, session_id: UUID) -> SessionAudit:
    """Replays a session's events and re-derives every decision they record.

    Also checks the stored events' hash chain (`abridged.application.chain`): the first
    event altered, deleted or moved is named in `SessionAudit.chain`. Raises
    `UnknownSessionError` for an unknown id. The audit only reads."""
    mapper = cast(ChainingMapper, app.mapper)
    chain = verify_chain(app.recorder.select_events(session_id), mapper.plain_state)
    try:
        audit = audit_events(app.history(session_id), app.model_capabilities)
    except Exception:
        if chain.ok:
            raise
        # A history altered so that it no longer replays (an event deleted, a state that no
        # longer decodes): the chain's verdict is the finding.
        return SessionAudit(session_id, "unknown", chain.events, (), (), (), chain)
    return attrs.evolve(audit, chain=chain)


def audit_events(
    events: Iterable[Any], capabilities: Mapping[str, ModelCapabilities] | None = None
) -> SessionAudit:
    """Audits one session's events, oldest first, starting with its `Started` event;
    `capabilities` are the host's rows the service decided with (`Sessions.model_capabilities`)."""
    return _Auditor(list(events), capabilities).run()


def _differences(recorded: Any, derived: Any) -> str:
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


def _inferred_extra(state: Session, estimate: int) -> int | None:
    """The per-turn content tokens that make the state's estimate equal `estimate`.

    Per-turn content is sent but not stored; a suppression records only the estimate that
    included it, so its size is recovered by inverting the (monotone) calibrated estimate."""
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


class _Auditor:
    """One replay: the state before each event, and what each decision event implies."""

    def __init__(
        self, events: Sequence[Any], capabilities: Mapping[str, ModelCapabilities] | None = None
    ) -> None:
        if not events or not isinstance(events[0], Session.Started):
            raise IncompleteHistoryError("an audit starts from the session's Started event")
        self.events = events
        self.findings: list[Finding] = []
        self.requests: list[RequestPoint] = []
        self.decision: Decision | None = None
        self.fallback: str | None = None
        self.pruned = False
        self.compacted: int | None = None
        self.produced: dict[int, int] = {}
        """The prefix revision each reply with thinking was produced under, by position."""
        self.capabilities = dict(capabilities or {})
        self.switch: tuple[str, str] | None = None
        """The models of a switch whose unreadable thinking has not been seen leaving yet."""
        self.moment = False
        """Whether the current preparation has pruned, compacted or been cancelled by a hook:
        the moments reasoning is downgraded at, so the cached prefix breaks once."""

    def run(self) -> SessionAudit:
        state: Session | None = None
        for index, event in enumerate(self.events):
            if state is not None:
                self.check(index, event, state)
            else:
                self.check_start(event)
            state = event.mutate(state)
        assert state is not None
        misses = cache_misses(self.events)
        for miss in misses:
            if miss.planned is False:
                self.findings.append(
                    Finding(
                        version=miss.version,
                        event="MessageAppended",
                        matches=False,
                        detail=f"a prompt-cache miss ({miss.cause}, about "
                        f"{miss.missed_tokens:,} tokens) that no recorded change explains",
                        timestamp=next(
                            e.timestamp for e in self.events if e.originator_version == miss.version
                        ),
                    )
                )
        return SessionAudit(
            session_id=state.id,
            model=state.model,
            events=len(self.events),
            findings=tuple(self.findings),
            compactions=tuple(compaction_records(self.events)),
            requests=tuple(self.requests),
            cache_misses=misses,
        )

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

    def check_start(self, event: Session.Started) -> None:
        fingerprint = event.settings.fingerprint
        self.found(
            event,
            fingerprint == event.settings_fingerprint,
            "settings fingerprint matches the recorded settings"
            if fingerprint == event.settings_fingerprint
            else f"settings fingerprint: recorded {event.settings_fingerprint!r}, "
            f"the recorded settings give {fingerprint!r}",
        )

    def check(self, index: int, event: Any, state: Session) -> None:
        if isinstance(event, Session.CompactionThresholdHit):
            self.check_hit(event, state)
        elif isinstance(event, Session.CompactionFailed):
            self.check_failed(event)
        elif isinstance(event, Session.CompactionCompleted):
            self.check_completed(event, state)
        elif isinstance(event, Session.ApiCompacted):
            self.check_api_compacted(event, state)
        elif isinstance(event, Session.ToolsPruned):
            self.check_pruned(index, event, state)
        elif isinstance(event, Session.ReasoningDowngraded):
            self.check_downgraded(event, state)
        elif isinstance(event, Session.CompactionSuppressed):
            self.check_suppressed(event, state)
        elif isinstance(event, Session.OverflowReported):
            expected = state.raw_estimate()
            self.found(
                event,
                event.estimate == expected,
                "estimate matches the replayed state"
                if event.estimate == expected
                else f"estimate: recorded {event.estimate}, re-derived {expected}",
            )
        elif isinstance(event, Session.SystemPromptChanged | Session.ToolsChanged):
            # A new system prompt or tools change the prefix of every thinking block shown:
            # a session whose model binds thinking drops them with it.
            self.moment = self.moment or state.thinking_bound
        elif isinstance(event, Session.ModelChanged):
            self.switch = (state.model, event.model)
        elif isinstance(event, Session.MessageAppended):
            self.check_switch(event, state)
            self.note_request(event, state)
            self.check_binding(event, state)
            self.moment = False

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

    # Decisions.

    def check_hit(self, event: Session.CompactionThresholdHit, state: Session) -> None:
        recorded = event.decision
        self.decision, self.fallback = recorded, None
        try:
            derived = planner.decide(state, recorded.trigger, recorded.extra_tokens)
        except ContextOverflowError as error:
            self.found(event, False, f"the planner finds no request that fits: {error}")
            return
        if derived is None:
            self.found(event, False, "the planner would not compact here")
            return
        if derived != recorded:
            self.found(event, False, _differences(recorded, derived))
            return
        guard = planner.suppression(state, recorded)
        if guard is not None:
            self.found(event, False, f"a loop guard would have suppressed it: {guard}")
            return
        self.found(
            event,
            True,
            f"{recorded.trigger} decision re-derived: keep from message "
            f"{recorded.retained_from + 1} ({recorded.reason})",
        )

    def check_failed(self, event: Session.CompactionFailed) -> None:
        decision = self.decision
        if decision is None:
            self.found(event, False, "a compaction failed that no decision started")
            return
        expected = "raise" if decision.trigger == "manual" else "truncate"
        self.fallback = event.fallback
        self.found(
            event,
            event.fallback == expected,
            f"fallback {event.fallback} for a {decision.trigger} compaction"
            if event.fallback == expected
            else f"fallback: recorded {event.fallback}, a {decision.trigger} compaction "
            f"falls back by {expected}",
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

    def check_completed(self, event: Session.CompactionCompleted, state: Session) -> None:
        decision, self.decision = self.decision, None
        if decision is None:
            self.found(event, False, "a compaction completed that no decision started")
            return
        replaced = len(state.summaries) if decision.resummarize else 0
        first = state.summaries[0].first_position if replaced else state.retained_from
        kept = [e for e in state.entries if e.position >= decision.retained_from]
        # System messages of the summarized range stay in view: a compaction carries them.
        carried = [
            e for e in state.entries if e.position < decision.retained_from and e.message.is_system
        ]
        summaries = [*state.summaries[replaced:], event.summary]
        after = calibrated(
            state,
            raw_estimate(state, summaries, kept, sum(e.shown_tokens for e in [*kept, *carried])),
        )
        expected = {
            "generation": state.generation + 1,
            "replaced_chunks": replaced,
            "retained_from": decision.retained_from,
            "messages_summarized": sum(
                1 for e in state.entries if e.position < decision.retained_from
            ),
            "tokens_before": state.estimate(),
            "tokens_after": after,
            "summary first position": first,
            "summary last position": decision.retained_from - 1,
            "summary generation": state.generation + 1,
        }
        recorded = {
            "generation": event.generation,
            "replaced_chunks": event.replaced_chunks,
            "retained_from": event.retained_from,
            "messages_summarized": event.messages_summarized,
            "tokens_before": event.tokens_before,
            "tokens_after": event.tokens_after,
            "summary first position": event.summary.first_position,
            "summary last position": event.summary.last_position,
            "summary generation": event.summary.generation,
        }
        problems = [
            f"{name}: recorded {recorded[name]!r}, re-derived {value!r}"
            for name, value in expected.items()
            if recorded[name] != value
        ]
        if self.fallback == "truncate" and event.strategy != "truncate":
            problems.append(f"strategy: recorded {event.strategy}, the summarizer failed")
        if not event.summary.text.strip():
            problems.append("the summary is empty")
        self.found(
            event,
            not problems,
            "; ".join(problems)
            or f"generation {event.generation}: {event.messages_summarized} messages "
            f"summarized, {event.tokens_before:,} -> {event.tokens_after:,} tokens",
        )
        self.compacted = event.generation
        self.moment = True

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
                planner.decide(state, "threshold", extra or 0)
            except ContextOverflowError:
                pass
            else:
                if extra is not None:
                    self.found(event, False, "a request fitted without it")
                    return
                # No decision recorded the request's per-turn content, which may be what
                # made it overflow.
                assumed = " (assuming per-turn content made the request overflow)"
        elif self.compacted is not None:
            # A compaction of this preparation moved the cached prefix: the retained tail's
            # outputs are pruned with it.
            plan = planner.plan_prune_with_compaction(state)
        else:
            plan = planner.plan_prune(state, extra or 0)
        if (
            self.compacted is None
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
                    + _differences(output, want)
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
            self.found(
                event,
                False,
                f"{len(left)} thinking block(s) of {producer} still shown to {reader}, which "
                "does not read them: " + ", ".join(f"message {b.position + 1}" for b in left),
            )

    def check_switch_downgrade(self, event: Session.ReasoningDowngraded, state: Session) -> None:
        if self.switch is None:
            self.found(event, False, f"{event.reason}, but no change of model preceded it")
            return
        producer, reader = self.switch
        self.switch = None
        derived = unreadable_thinking(state, producer, reader, self.capabilities)
        reason = switch_reason(producer, reader, state.settings.reasoning_policy)
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
        problem = _downgrade_difference(event.blocks, planner.plan_downgrades(state))
        self.found(
            event, not problem, problem or f"{len(event.blocks)} thinking block(s) {event.reason}"
        )

    def check_suppressed(self, event: Session.CompactionSuppressed, state: Session) -> None:
        extra = _inferred_extra(state, event.estimate)
        if extra is None:
            self.found(
                event,
                False,
                f"estimate: recorded {event.estimate}, the replayed state gives "
                f"{state.estimate()} before any per-turn content",
            )
            return
        try:
            decision = planner.decide(state, event.trigger, extra)
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
        reason = planner.suppression(state, decision)
        self.found(
            event,
            reason == event.reason,
            f"loop guard: {event.reason}"
            if reason == event.reason
            else f"reason: recorded {event.reason!r}, re-derived {reason!r}",
        )

    # What people read.

    def note_request(self, event: Session.MessageAppended, state: Session) -> None:
        if event.message.role is not Role.ASSISTANT:
            return
        usage = event.usage
        if event.request_estimate:
            tokens = calibrated(state, event.request_estimate)
        else:
            tokens = state.estimate()
        limits = state.limits
        self.requests.append(
            RequestPoint(
                number=len(self.requests) + 1,
                version=event.originator_version,
                tokens=tokens,
                window=limits.window,
                threshold=limits.threshold,
                budget=limits.budget,
                input_tokens=usage.input_tokens if usage else None,
                cache_read_tokens=usage.cache_read_input_tokens if usage else None,
                cache_creation_tokens=usage.cache_creation_input_tokens if usage else None,
                pruned_before=self.pruned,
                compacted_before=self.compacted,
                timestamp=event.timestamp,
            )
        )
        self.pruned, self.compacted = False, None


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
