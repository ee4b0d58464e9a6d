"""The audit: each kind of recorded decision re-derived, and each kind of alteration caught."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import attrs
import pytest

from abridged.application.auditing import (
    IncompleteHistoryError,
    SessionAudit,
    audit_events,
    audit_session,
)
from abridged.application.ports import HookVerdict
from abridged.application.service import Sessions
from abridged.domain import thinking_plan
from abridged.domain.messages import Message
from abridged.domain.session import Session
from abridged.domain.usage import Usage
from tests.conftest import MakeApp
from tests.support.builders import thinking_exchange, turn, words
from tests.support.fakes import FakeSummarizer
from tests.unit.test_triggers import Clock, RecordingHooks, feed, start


def kinds(audit: SessionAudit) -> set[str]:
    return {f.event for f in audit.findings}


def altered(app: Sessions, session_id: UUID, kind: type, **changes: Any) -> list[Any]:
    """The session's events with the first event of `kind` changed as an attacker would."""
    events = list(app.history(session_id))
    index = next(k for k, e in enumerate(events) if isinstance(e, kind))
    copy = object.__new__(type(events[index]))
    copy.__dict__.update(events[index].__dict__ | changes)
    events[index] = copy
    return events


def test_threshold_compactions_prunes_and_guards_are_re_derived(make_app: MakeApp) -> None:
    app = make_app(summarizer=FakeSummarizer(words(2_000, "fact")))
    session_id = start(
        app,
        window=3_000,
        threshold_floor_tokens=0,
        cooldown_messages=6,
        retained_share=1.0,
        # Fewer turns than the session has: a compaction has turns to summarize.
        keep_recent_turns=10,
        # A late threshold and a large summary keep the context near it after compacting,
        # so the guard has something to suppress.
        threshold_ratio=0.7,
        target_ratio=1.0,
        summary_share=0.1,
        summaries_share=0.2,
        min_growth_share=0.0,
        ledger_share=0.0,
    )
    for i in range(12):
        feed(app, session_id, list(turn(f"Request {i}", [words(150)])))

    audited = audit_session(app, session_id)
    assert audited.ok, audited.mismatches
    assert {"CompactionThresholdHit", "CompactionCompleted", "CompactionSuppressed"} <= kinds(
        audited
    )
    completed = [e for e in app.history(session_id) if isinstance(e, Session.CompactionCompleted)]
    assert [c.generation for c in audited.compactions] == [c.generation for c in completed]
    assert all(c.trigger == "threshold" and c.fallback is None for c in audited.compactions)


def test_a_failed_summary_and_its_fallback_are_audited(make_app: MakeApp) -> None:
    app = make_app(summarizer=FakeSummarizer(fail=2))
    session_id = start(app, window=3_000, threshold_floor_tokens=0)
    for i in range(12):
        feed(app, session_id, list(turn(f"Request {i}", [words(150)])))

    audited = audit_session(app, session_id)
    assert audited.ok, audited.mismatches
    assert "CompactionFailed" in kinds(audited)
    assert audited.compactions[0].fallback == "truncate"
    assert audited.compactions[0].strategy == "truncate"

    wrong = altered(app, session_id, Session.CompactionFailed, fallback="raise")
    assert [m.event for m in audit_events(wrong).mismatches][:1] == ["CompactionFailed"]


def test_manual_compaction_and_reasoning_downgrades_are_re_derived(app: Sessions) -> None:
    session_id = start(app, window=100_000, reasoning_keep_turns=1, prune_min_share=0.0)
    call, result = thinking_exchange(words(30), thought="old reasoning")
    feed(app, session_id, [Message.user("One"), call, result, Message.assistant("ok")])
    call, result = thinking_exchange(words(30), thought="current reasoning")
    feed(app, session_id, [Message.user("Two"), call, result, Message.assistant("ok")])
    app.append_message(session_id, Message.user("Three"))
    app.compact(session_id, "keep the file names")

    audited = audit_session(app, session_id)
    assert audited.ok, audited.mismatches
    assert {"ReasoningDowngraded", "CompactionCompleted"} <= kinds(audited)
    assert audited.compactions[-1].trigger == "manual"

    downgrade = next(
        e for e in app.history(session_id) if isinstance(e, Session.ReasoningDowngraded)
    )
    blocks = (attrs.evolve(downgrade.blocks[0], action="summarized", text="forged"),)
    wrong = audit_events(altered(app, session_id, Session.ReasoningDowngraded, blocks=blocks))
    assert wrong.mismatches[0].event == "ReasoningDowngraded"
    assert wrong.mismatches[0].version == downgrade.originator_version


def test_per_turn_content_and_hook_cancellations_are_re_derived(make_app: MakeApp) -> None:
    hooks = RecordingHooks(HookVerdict(cancel="not now"))
    app = make_app(context_provider=Clock(), hooks=hooks)
    session_id = start(app, window=3_000, threshold_ratio=0.5, threshold_floor_tokens=0)
    for i in range(22):
        feed(app, session_id, list(turn(f"Request {i}", [words(120)])))

    audited = audit_session(app, session_id)
    assert audited.ok, audited.mismatches
    history = app.history(session_id)
    assert any(isinstance(e, Session.CompactionSuppressed) for e in history)
    assert any(isinstance(e, Session.CompactionCompleted) for e in history)

    wrong = altered(app, session_id, Session.CompactionSuppressed, estimate=10)
    assert audit_events(wrong).mismatches[0].event == "CompactionSuppressed"


def test_a_provider_overflow_and_reported_usage_are_audited(app: Sessions) -> None:
    session_id = start(app, window=4_000, threshold_floor_tokens=0)
    for i in range(6):
        for message in turn(f"Request {i}", [words(120)]):
            if message.role.value == "assistant":
                prepared = app.prepare_request(session_id)
                usage = Usage(prepared.context.estimate, 10, 100, 50)
                app.record_reply(session_id, message, usage)
            else:
                app.append_message(session_id, message)
    app.append_message(session_id, Message.user("More"))
    app.uow.run(session_id, lambda: app.overflows.compact(session_id, 3_900, None))

    audited = audit_session(app, session_id)
    assert audited.ok, audited.mismatches
    assert "OverflowReported" in kinds(audited)
    assert audited.compactions[-1].trigger == "overflow"
    assert all(r.cache_read_tokens == 100 for r in audited.requests)
    assert [r.number for r in audited.requests] == list(range(1, len(audited.requests) + 1))


@pytest.mark.parametrize(
    ("kind", "change"),
    [
        (Session.CompactionCompleted, {"tokens_before": 1}),
        (Session.CompactionCompleted, {"generation": 7}),
        (Session.ToolsPruned, {"reason": "because"}),
        (Session.CompactionThresholdHit, {"decision": None}),
    ],
)
def test_an_altered_decision_is_named_by_version_and_type(
    make_app: MakeApp, kind: type, change: dict[str, Any]
) -> None:
    app = make_app()
    # Large outputs in a roomy window get pruned; small ones in a small window get compacted.
    window, size = (12_000, 900) if kind is Session.ToolsPruned else (3_000, 150)
    session_id = start(
        app, window=window, threshold_floor_tokens=0, prune_min_share=0.0, prune_protect_share=0.1
    )
    for i in range(12):
        feed(app, session_id, list(turn(f"Request {i}", [words(size), words(90)])))
    assert audit_session(app, session_id).ok
    events = list(app.history(session_id))
    target: Any = next(e for e in events if isinstance(e, kind))
    if "decision" in change:
        change = {"decision": attrs.evolve(target.decision, turns_kept=9)}

    mismatches = audit_events(altered(app, session_id, kind, **change)).mismatches

    assert mismatches
    assert (mismatches[0].version, mismatches[0].event) == (
        target.originator_version,
        kind.__name__,
    )


def test_an_audit_needs_the_whole_stream(app: Sessions) -> None:
    session_id = start(app)
    app.append_message(session_id, Message.user("Hi"))
    with pytest.raises(IncompleteHistoryError, match="Started"):
        audit_events([])
    with pytest.raises(IncompleteHistoryError):
        audit_events(app.history(session_id)[1:])


def test_reasoning_downgraded_outside_a_batching_moment_is_a_mismatch(app: Sessions) -> None:
    session_id = start(app, window=100_000, reasoning_keep_turns=1, prune_min_share=0.5)
    call, result = thinking_exchange(words(30), thought="old reasoning")
    feed(app, session_id, [Message.user("One"), call, result, Message.assistant("ok")])
    app.append_message(session_id, Message.user("Two"))
    session = app.session(session_id)
    due = thinking_plan.plan_downgrades(session)
    assert due  # due, but too small to break the cached prefix on its own
    assert audit_session(app, session_id).ok

    # A writer that downgrades anyway: the blocks are the planned ones, the moment is not.
    session.downgrade_reasoning(due, "forged")
    app.save(session)

    mismatches = audit_session(app, session_id).mismatches
    assert [m.event for m in mismatches] == ["ReasoningDowngraded"]
    assert "prune or compaction" in mismatches[0].detail


def test_replies_brought_in_as_history_are_not_requests(app: Sessions) -> None:
    # A conversation brought in whole (as a proxy starts a branch): its replies were answered
    # elsewhere; only the reply recorded here answers a request of this session.
    history = [
        Message.user("Fix the parser."),
        Message.assistant("Fixed."),
        Message.user("Now the tests."),
        Message.assistant("Passing."),
        Message.user("And the docs?"),
    ]
    session_id = app.start_session(
        model="claude-test", context_window=8_000, max_output_tokens=1_000, messages=history
    )
    app.prepare_request(session_id)
    app.record_reply(session_id, Message.assistant("Updated."))
    app.append_messages(session_id, [Message.user("Thanks."), Message.assistant("Welcome.")])

    audited = audit_session(app, session_id)

    assert audited.ok
    assert [r.number for r in audited.requests] == [1]
    recorded = [
        e.originator_version
        for e in app.history(session_id)
        if isinstance(e, Session.MessageAppended) and e.message.text == "Updated."
    ]
    assert [r.version for r in audited.requests] == recorded
