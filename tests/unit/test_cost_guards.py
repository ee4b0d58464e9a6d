"""The cache-economic guards of threshold compaction and pruning."""

from __future__ import annotations

from uuid import UUID

import attrs

from abridged.application.service import Sessions
from abridged.domain import planner
from abridged.domain.guards import guards_holding
from abridged.domain.messages import Message
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import feed
from tests.support.fakes import FakeTokenCounter

COUNTER = FakeTokenCounter()


def start(app: Sessions, **settings: object) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=4_000,
        max_output_tokens=500,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0, **settings),  # type: ignore[arg-type]
    )


def test_a_compaction_waits_until_the_context_has_grown_enough_since_the_last(
    app: Sessions,
) -> None:
    # The threshold is low and the target lower still: without the guard every few messages
    # would compact again, each time rewriting the cached context for little.
    session_id = start(app, threshold_ratio=0.3, target_ratio=0.15, min_growth_share=0.3)
    feed(app, session_id, [m for i in range(30) for m in turn(f"Ask {i}", [words(90)])], COUNTER)

    events = app.history(session_id)
    completed = [e for e in events if isinstance(e, Session.CompactionCompleted)]
    hits = [e for e in events if isinstance(e, Session.CompactionThresholdHit)]
    suppressed = [e for e in events if isinstance(e, Session.CompactionSuppressed)]
    growth = int(0.3 * 3_500)
    assert len(completed) >= 2
    assert any("waiting until the context has grown" in s.reason for s in suppressed)
    for previous, hit in zip(completed, hits[1:], strict=False):
        assert hit.decision.estimate >= previous.tokens_after + growth


def test_without_the_guard_the_same_session_compacts_more_often(app: Sessions) -> None:
    guarded = start(app, threshold_ratio=0.3, target_ratio=0.15, min_growth_share=0.3)
    free = start(app, threshold_ratio=0.3, target_ratio=0.15, min_growth_share=0.0)
    messages = [m for i in range(30) for m in turn(f"Ask {i}", [words(90)])]
    for session_id in (guarded, free):
        feed(app, session_id, list(messages), COUNTER)

    def compactions(session_id: UUID) -> int:
        return app.session(session_id).generation

    assert compactions(guarded) < compactions(free)


def test_twice_in_a_row_the_second_request_does_not_compact(app: Sessions) -> None:
    session_id = start(app, threshold_ratio=0.3, cooldown_messages=0)
    feed(app, session_id, [m for i in range(12) for m in turn(f"Ask {i}", [words(90)])], COUNTER)
    app.append_message(session_id, Message.user("And now?"))

    first = app.prepare_request(session_id)
    second = app.prepare_request(session_id)

    assert second.compaction is None
    assert second.compactions_so_far == first.compactions_so_far


def test_a_retried_request_names_the_guard_already_recorded_while_it_holds(
    app: Sessions,
) -> None:
    # A compaction that freed too little leaves both the stall and the growth guard armed;
    # a downgrade later in the same prepare then lowers the estimate below what the compaction
    # left, where the growth guard comes first. Naming it then recorded a second
    # `CompactionSuppressed` on a retry with nothing new.
    session_id = start(app, threshold_ratio=0.3, cooldown_messages=0, min_growth_share=0.0)
    feed(app, session_id, [m for i in range(12) for m in turn(f"Ask {i}", [words(90)])], COUNTER)
    session = app.session(session_id)
    hits = [e for e in app.history(session_id) if isinstance(e, Session.CompactionThresholdHit)]
    decision = hits[-1].decision
    assert decision.estimate <= decision.budget
    session.compacted_to = session.stalled_estimate = decision.estimate
    stalled = planner.suppression(session, decision)
    assert stalled is not None
    assert "could not reduce" in stalled
    session.suppressed = stalled

    lower = attrs.evolve(decision, estimate=decision.estimate - 8)

    assert planner.suppression(session, lower) == stalled
    assert len(guards_holding(session, lower)) == 2
    session.suppressed = None
    assert "waiting until the context has grown" in (planner.suppression(session, lower) or "")
