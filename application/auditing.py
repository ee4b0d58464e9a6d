"""The audit: every recorded decision re-derived from the events before it.

A session's events are replayed in order. Before each decision event is applied, the pure
planners (`abridged.domain.planner`) are asked the same question against the replayed state
and the recorded settings, and the answer is compared with what the event recorded. A
mismatch means the events were altered, or the code that wrote them decided differently from
the code reading them; either way an operator needs to know, naming the event.

With the verdicts come what people read: the session's compactions (the records of
`abridged.application.compactions`, as `Sessions.compactions` returns them), and from the
replay the estimate of every request the model received (each model reply follows one), for
the report's chart. The check of each kind of decision is in
`abridged.application.decision_checks`; the completion of a compaction is checked here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, cast
from uuid import UUID

import attrs

from abridged.application.cache_misses import CacheMiss, cache_misses
from abridged.application.chain import ChainingMapper, ChainVerdict, verify_chain
from abridged.application.compactions import CompactionRecord, compaction_records
from abridged.application.decision_checks import (
    DecisionChecks,
    Finding,
)
from abridged.application.service import Sessions
from abridged.domain.capabilities import ModelCapabilities
from abridged.domain.context import calibrated, raw_estimate
from abridged.domain.errors import SessionError
from abridged.domain.messages import Role
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


class _Auditor(DecisionChecks):
    """One replay: the state before each event, and what each decision event implies."""

    def __init__(
        self, events: Sequence[Any], capabilities: Mapping[str, ModelCapabilities] | None = None
    ) -> None:
        if not events or not isinstance(events[0], Session.Started):
            raise IncompleteHistoryError("an audit starts from the session's Started event")
        super().__init__(events, capabilities)
        self.requests: list[RequestPoint] = []

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
            self.carry_binding(event, state)
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
        elif isinstance(event, Session.MessagesReshown | Session.LedgerUpdated):
            # Messages shown reduced again, or the ledger made smaller to fit a request (it
            # comes before every message), change earlier content: reasoning is downgraded
            # with them, as with a prune.
            self.moment = True
        elif isinstance(event, Session.TurnContextShown):
            self.check_turn_context(event, state)
        elif isinstance(event, Session.TurnWithdrawn):
            self.check_withdrawn(event, state)
        elif isinstance(event, Session.ModelChanged):
            self.switch = (state.model, event.model)
            # A model that binds thinking takes only blocks written under the prefix it is sent:
            # the switch downgrades the others with it.
            self.moment = self.moment or bool(event.thinking_bound)
        elif isinstance(event, Session.MessageAppended):
            self.check_switch(event, state)
            self.note_request(event, state)
            self.check_binding(event, state)
            self.moment = False
            # A background compaction ends before any message: what prunes after one is
            # the next preparation's, which did not compact.
            if self.background_applied:
                self.behind, self.background_applied = True, False

    def check_failed(self, event: Session.CompactionFailed) -> None:
        if event.fallback == "dropped":  # a background summary: nobody waits, nothing falls back
            started, self.background = self.background, None
            self.decision = None if self.decision is started else self.decision
            ok = started is not None
            detail = "a background summary failed" + ("" if ok else " that no decision started")
            self.found(event, ok, detail)
            return
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

    def check_completed(self, event: Session.CompactionCompleted, state: Session) -> None:
        decision, self.decision = self.decision, None
        if decision is self.background:
            self.background = None
        if decision is None:
            self.found(event, False, "a compaction completed that no decision started")
            return
        chained = event.summary.chained_revision
        # A chained block stands for everything before the kept turns, earlier chunks too.
        replaced = len(state.summaries) if decision.resummarize or chained is not None else 0
        first = state.summaries[0].first_position if replaced else state.retained_from
        kept = [e for e in state.entries if e.position >= decision.retained_from]
        # System messages of the summarized range stay in view: a compaction carries them,
        # but for the system prompts a later one replaces (not before it recorded which).
        carried = [
            e for e in state.entries if e.position < decision.retained_from and e.message.is_system
        ]
        superseded: tuple[int, ...] | None = None
        if event.superseded_system is not None:
            superseded = state.superseded_at(decision.retained_from, event.summary)
        gone = superseded or ()
        shown = sum(e.shown_tokens for e in [*kept, *carried] if e.position not in gone)
        shown -= sum(e.shown_tokens for e in state.carried_system if e.position in gone)
        summaries = [*state.summaries[replaced:], event.summary]
        after = calibrated(state, raw_estimate(state, summaries, kept, shown))
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
            "system prompts superseded": superseded,
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
            "system prompts superseded": (
                None if event.superseded_system is None else tuple(event.superseded_system)
            ),
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
        self.background_applied = decision.trigger == "background"
        self.behind = False
        self.moment = True

    # What people read.

    def note_request(self, event: Session.MessageAppended, state: Session) -> None:
        if event.message.role is not Role.ASSISTANT or _brought_in(event):
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
        self.pruned, self.compacted, self.behind = False, None, False


def _brought_in(event: Session.MessageAppended) -> bool:
    """Whether a reply was appended as history (`append_message`, `append_messages`, a
    session started with messages, a branch the proxy started), not recorded as the answer
    to a request (`record_reply` records the prefix it was produced under and its model): no
    request was sent for it."""
    return (
        event.prefix_revision is None
        and event.model is None
        and event.usage is None
        and event.request_estimate is None
    )
