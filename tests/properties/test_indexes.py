"""The session's incremental indexes always equal a from-scratch recomputation.

Each conversation runs through the service (appends, replies, prepares that prune, downgrade
reasoning and compact); then its events are replayed one by one, and after every event the
indexes the mutators kept are compared with `indexes.recompute` over the retained tail, and
the indexed planners with the planners that walk the tail.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast
from uuid import UUID

from hypothesis import event as note
from hypothesis import given
from hypothesis import strategies as st

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.application.snapshots import bodiless
from abridged.domain import planner
from abridged.domain.indexes import INDEX_NAMES, protected_index, recompute
from abridged.domain.messages import Message
from abridged.domain.pruning import plan_pruning, plan_reasoning, protected_from
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.integration.test_stored_sessions import FIXTURE, stored
from tests.properties.strategies import conversations
from tests.properties.test_invariants import COUNTER, PROPERTY, knobs, replay_live, windows


def assert_indexes_hold(session: Session) -> None:
    entries = session.entries
    assert [e.position for e in entries] == list(
        range(session.retained_from, session.retained_from + len(entries))
    )
    expected = recompute(entries, session.settings)
    for name in INDEX_NAMES:
        assert getattr(session, name) == getattr(expected, name), name
    assert session.tail_tokens == sum(e.shown_tokens for e in entries)
    assert set(session.tool_ids) == {u.id for e in entries for u in e.message.tool_uses}
    assert len(session.entry_versions) == len(entries)


def assert_planners_agree(session: Session) -> None:
    limits = session.limits
    protect = protected_from(session.entries, limits.prune_protect_tokens)
    assert protected_index(session.output_sums, limits.prune_protect_tokens) == protect
    if not session.awaiting_reply:
        return
    estimate = session.estimate()
    # Past the threshold, unless a guard holds the compaction back (the prune then needs its
    # own minimum): the planner's rule, computed here from the state without the indexes.
    past = estimate >= limits.threshold and (
        estimate > limits.budget or not planner.held_back(session, estimate)
    )
    scanned = plan_pruning(session.entries, session.prune_boundary, limits, past_threshold=past)
    assert planner.plan_prune(session) == scanned
    downgrades = plan_reasoning(session.entries, limits) if session.thinking_seen else ()
    assert planner.plan_downgrades(session) == downgrades
    assert planner.downgradable_tokens(session) == sum(b.tokens_before for b in downgrades)


@PROPERTY
@given(conversations(max_turns=7), windows, knobs)
def test_indexes_equal_a_recomputation_after_every_event(
    messages: list[Message], window: tuple[int, int], knob: CompactionSettings
) -> None:
    app, session_id, _, _ = replay_live(messages, window, knob, ExtractiveSummarizer(COUNTER))
    replayed: Session | None = None
    kinds = set()
    for event in app.history(session_id):
        replayed = event.mutate(replayed)
        assert replayed is not None
        kinds.add(type(event).__name__)
        assert_indexes_hold(replayed)
        assert_planners_agree(replayed)
    for kind in ("ToolsPruned", "ReasoningDowngraded", "CompactionCompleted"):
        note(f"{kind}: {'yes' if kind in kinds else 'no'}")
    live = app.session(session_id)
    assert replayed is not None
    for name in (*INDEX_NAMES, "entry_versions"):
        assert getattr(live, name) == getattr(replayed, name), name
    appended = [
        e.originator_version
        for e in app.history(session_id)
        if isinstance(e, Session.MessageAppended)
    ]
    assert live.entry_versions == [appended[e.position] for e in live.entries]


@PROPERTY
@given(conversations(max_turns=4), st.integers(2_500, 6_000))
def test_a_snapshot_keeps_the_indexes(messages: list[Message], window: int) -> None:
    app, session_id, _, _ = replay_live(
        messages, (window, 400), CompactionSettings(), ExtractiveSummarizer(COUNTER)
    )
    live = app.session(session_id)
    assert app.snapshots is not None
    if not list(app.snapshots.get(session_id, gt=live.version - 1)):  # none at this version yet
        app.take_snapshot(session_id)
    snapshot = next(iter(app.snapshots.get(session_id, desc=True, limit=1)))
    assert snapshot.originator_version == live.version
    # The snapshot points at the stored messages; a load reads them back from the events.
    assert bodiless(snapshot.state["entries"]) == len(live.entries)  # type: ignore[attr-defined]
    app.loader.evict(session_id)
    restored = app.session(session_id)
    assert restored.entries == live.entries
    assert_indexes_hold(restored)
    for name in (*INDEX_NAMES, "entry_versions"):
        assert getattr(restored, name) == getattr(live, name), name


def test_a_snapshot_from_before_the_indexes_gets_them_on_load(tmp_path: Path) -> None:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    session_id = UUID(data["session_id"])
    app = bootstrap(tmp_path / "old.sqlite3")
    assert app.snapshots is not None
    app.snapshots.recorder.insert_events(stored(data["snapshots"], session_id))
    assert '"tool_ids"' not in data["snapshots"][-1]["state"]
    snapshot = next(iter(app.snapshots.get(session_id, desc=True, limit=1)))
    restored = cast(Session, snapshot.mutate(None))  # type: ignore[attr-defined]
    assert restored.entries
    assert_indexes_hold(restored)
