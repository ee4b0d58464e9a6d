"""The preparation policy (`abridged.domain.preparation`): what a preparation does, in order,
on a session as it stands, and what the service does with it."""

from __future__ import annotations

from uuid import UUID

import pytest

from abridged.application.service import Sessions
from abridged.domain.messages import Message, Role
from abridged.domain.preparation import plan_preparation, prune_after
from abridged.domain.pruning import PAST_THRESHOLD
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import counted_writes


def session_with(app: Sessions, turns: int, **knobs: object) -> UUID:
    """A session of `turns` turns with a large tool output each, appended unprepared."""
    session_id = app.start_session(
        model="claude-sonnet-4-5",  # thinking not bound to its prefix: prunes may run alone
        context_window=12_000,
        max_output_tokens=400,
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0, **knobs),  # type: ignore[arg-type]
    )
    for i in range(turns):
        for message in turn(f"Request {i}", [words(600)]):
            if message.role is Role.ASSISTANT:
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
    app.append_message(session_id, Message.user("And now?"))
    return session_id


def test_a_quiet_session_needs_no_summary(app: Sessions) -> None:
    plan = plan_preparation(app.session(session_with(app, 1)))

    assert plan.decision is None
    assert plan.overflow is None


def test_past_the_threshold_the_prune_waits_for_the_compaction(app: Sessions) -> None:
    session = app.session(session_with(app, 12))

    plan = plan_preparation(session)

    assert plan.prune is None
    assert plan.deferred is not None
    assert plan.deferred.reason == PAST_THRESHOLD
    assert plan.decision is not None
    assert plan.suppressed is None  # a summary is due: the service takes the lock for it
    # With no compaction after all, the deferred prune runs alone: it is the same plan.
    assert prune_after(session, compacted=False) == plan.deferred


def test_the_service_carries_the_plan_out(app: Sessions) -> None:
    session_id = session_with(app, 12)
    plan = plan_preparation(app.session(session_id))

    prepared = app.prepare_request(session_id)

    assert plan.decision is not None
    assert prepared.compaction is not None
    assert prepared.compaction.retained_from == plan.decision.retained_from
    assert prepared.compaction.trigger == plan.trigger == "threshold"


def test_a_quiet_append_and_prepare_is_one_transaction(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = session_with(app, 1)
    app.record_reply(session_id, Message.assistant("Done."))
    before = app.recorder.max_notification_id() or 0
    inserts = counted_writes(app, monkeypatch)

    prepared = app.append_and_prepare(session_id, Message.user("Thanks, one more thing."))

    assert prepared.compaction is None
    assert len(inserts) == 1
    assert (app.recorder.max_notification_id() or 0) > before
