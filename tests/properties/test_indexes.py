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
from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.application.service import Sessions
from abridged.application.snapshot_columns import bodiless
from abridged.domain import planner, thinking_plan
from abridged.domain.indexes import (
    INDEX_NAMES,
    has_thinking,
    protected_index,
    recompute,
    replaced_count,
)
from abridged.domain.messages import Message, Role
from abridged.domain.pruning import downgrades_of, plan_pruning, plan_reasoning, protected_from
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.integration.test_stored_sessions import FIXTURE, stored
from tests.properties.strategies import TOOLS, conversations
from tests.properties.test_invariants import (
    COUNTER,
    PROPERTY,
    knobs,
    prepare,
    replay_live,
    windows,
)


def assert_indexes_hold(session: Session) -> None:
    entries = session.entries
    assert [e.position for e in entries] == list(
        range(session.retained_from, session.retained_from + len(entries))
    )
    expected = recompute(entries, session.settings)
    for name in INDEX_NAMES:
        assert getattr(session, name) == getattr(expected, name), name
    assert session.tail_tokens == sum(e.shown_tokens for e in entries)
    assert session.shown_otherwise() == replaced_count(entries)
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
    if session.thinking_bound and session.thinking_seen:
        # Thinking bound to its prefix: no prune between compactions, none inside an open
        # loop while the request fits; every thinking block shown goes at the next moment
        # (which moves the prefix revision: only a reply valid under the revision the moment
        # leaves stays), and none is worth a move of its own.
        held = estimate <= limits.budget and scanned_holds_prefix(session)
        assert thinking_plan.holds_prefix(session) == scanned_holds_prefix(session)
        assert planner.plan_prune(session) == (None if not past or held else scanned)
        stale = [e for e in session.entries if e.revision != session.prefix_revision]
        downgrades = downgrades_of(stale, session.settings)
        assert thinking_plan.plan_downgrades(session) == downgrades
        assert thinking_plan.downgradable_tokens(session) == 0
        return
    # Below the threshold, `auto` leaves a session's outputs whole until its first
    # compaction (`whole_until_threshold`), read here from the settings and the state.
    settings = session.settings
    whole = (
        not past
        and settings.whole_until_threshold
        and settings.tool_output_mode == "auto"
        and session.last_compaction_at < 0
        and not session.summaries
    )
    assert planner.plan_prune(session) == (None if whole else scanned)
    downgrades = plan_reasoning(session.entries, limits) if session.thinking_seen else ()
    assert thinking_plan.plan_downgrades(session) == downgrades
    assert thinking_plan.downgradable_tokens(session) == sum(b.tokens_before for b in downgrades)


def scanned_holds_prefix(session: Session) -> bool:
    """Whether the current turn shows thinking still valid under the prefix and has not
    ended, read from the messages."""
    last = session.entries[-1].message
    if not (last.tool_results or (last.role is Role.ASSISTANT and last.tool_uses)):
        return False
    for entry in reversed(session.entries):
        if entry.message.is_user_prompt:
            return False
        if has_thinking(entry):
            return entry.revision in (None, session.prefix_revision)
    return False


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


def run(
    messages: list[Message],
    window: tuple[int, int],
    knob: CompactionSettings,
    cold_at: frozenset[int] = frozenset(),
) -> tuple[Sessions, UUID, list[dict[str, object]]]:
    """The conversation through a service; before each message whose index is in `cold_at`
    the session is snapshotted and dropped from memory, so the next command loads it cold
    (its older messages read only when something needs them)."""
    app = Sessions(
        counter=COUNTER,
        summarizer=ExtractiveSummarizer(COUNTER),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        background=False,
    )
    session_id = app.start_session(
        model="claude-test",
        context_window=window[0],
        max_output_tokens=window[1],
        tools=TOOLS,
        settings=knob,
    )
    bodies: list[dict[str, object]] = []
    if messages[-1].role is Role.ASSISTANT:
        messages = [*messages, Message.user("What next?")]
    for index, message in enumerate(messages):
        if index in cold_at:
            cold_load(app, session_id)
        if message.role is Role.ASSISTANT:
            bodies.append(prepare(app, session_id))
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
    bodies.append(prepare(app, session_id))
    return app, session_id, bodies


def cold_load(app: Sessions, session_id: UUID) -> None:
    """Snapshots the session (unless a snapshot is at its version) and drops it from memory."""
    assert app.snapshots is not None
    version = app.session(session_id).version
    if not list(app.snapshots.get(session_id, gt=version - 1)):
        app.take_snapshot(session_id)
    app.loader.evict(session_id)


def comparable(session: Session) -> dict[str, object]:
    """The session's state without what differs between two runs (id and times)."""
    skipped = {"_id", "_created_on", "_modified_on", "_pending_events"}
    return {k: v for k, v in vars(session).items() if k not in skipped}


@settings(parent=PROPERTY, max_examples=20)
@given(
    # Cold loads fall within the first 40 messages; four turns (up to a hundred messages)
    # carry the session on past them, through compactions of the small windows drawn.
    conversations(max_turns=4),
    windows,
    knobs,
    st.frozensets(st.integers(1, 40), max_size=4),
)
def test_cold_loads_then_more_commands_equal_the_live_session(
    messages: list[Message],
    window: tuple[int, int],
    knob: CompactionSettings,
    cold_at: frozenset[int],
) -> None:
    live_app, live_id, live_bodies = run(messages, window, knob)
    app, session_id, bodies = run(messages, window, knob, cold_at)
    note(f"cold loads: {'yes' if any(i < len(messages) for i in cold_at) else 'no'}")
    # The same requests, and the same state, field by field, indexes included.
    assert bodies == live_bodies
    cold, live = app.session(session_id), live_app.session(live_id)
    assert comparable(cold) == comparable(live)
    assert_indexes_hold(cold)
    # And once more from the last snapshot alone, every body read on first need.
    cold_load(app, session_id)
    reloaded = app.session(session_id)
    assert comparable(reloaded) == comparable(live)
