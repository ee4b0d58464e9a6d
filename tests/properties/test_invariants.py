"""The design's invariants, held over generated conversations.

Every request built is valid and within budget (or the caller gets the typed oversize error
and nothing is saved); history is never rewritten; thinking blocks go out byte for byte;
replaying the events reproduces the live state and every decision; a failing summarizer
loses nothing.
"""

from __future__ import annotations

from uuid import UUID

from hypothesis import HealthCheck, given, reject, settings
from hypothesis import event as note
from hypothesis import strategies as st

from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.ports import Summarizer
from abridged.application.service import Sessions
from abridged.domain import planner
from abridged.domain.errors import ContextOverflowError, ContextTooSmallError
from abridged.domain.messages import Message, RedactedThinkingBlock, Role, ThinkingBlock
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.properties.strategies import TOOLS, conversations
from tests.support.checks import check_request, stored_version
from tests.support.fakes import FakeSummarizer

COUNTER = TiktokenCounter()

# Six properties (here, in the audit and the index properties) replay generated sessions with
# these settings, each its own draws: at 25 examples each, a run replays 150 sessions.
PROPERTY = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

windows = st.tuples(st.integers(2_500, 12_000), st.integers(200, 1_200))
knobs = st.builds(
    CompactionSettings,
    threshold_ratio=st.floats(0.3, 1.0),
    threshold_floor_tokens=st.integers(0, 3_000),
    keep_recent_turns=st.integers(0, 6),
    keep_recent_tokens=st.none() | st.integers(200, 5_000),
    retained_share=st.floats(0.1, 0.8),
    summary_strategy=st.sampled_from(["additive", "update"]),
    tool_output_mode=st.sampled_from(["auto", "keep_all", "keep_none"]),
    prune_strategy=st.sampled_from(["head-tail", "name-only"]),
    prune_protect_share=st.floats(0.05, 0.6),
    prune_min_share=st.floats(0.0, 0.2),
    tool_policies=st.dictionaries(
        st.sampled_from(["run_command", "read_file", "edit_file"]),
        st.sampled_from(["prune", "keep", "summarize"]),
        max_size=2,
    ),
    reasoning_policy=st.sampled_from(["drop", "summarize"]),
    reasoning_keep_turns=st.integers(0, 3),
    cooldown_messages=st.integers(0, 8),
    target_ratio=st.floats(0.1, 1.0),
    ledger_share=st.sampled_from([0.0, 0.05, 0.3, 0.5]),
    salient_chars=st.integers(0, 3_000),
    prune_salient_chars=st.integers(0, 1_000),
    summary_share=st.floats(0.02, 0.04),
    min_growth_share=st.sampled_from([0.0, 0.1, 0.35]),
)


def replay_live(
    messages: list[Message],
    window: tuple[int, int],
    knob: CompactionSettings,
    summarizer: Summarizer,
) -> tuple[Sessions, UUID, list[dict[str, object]], int]:
    app = Sessions(
        counter=COUNTER, summarizer=summarizer, env={"PERSISTENCE_MODULE": "eventsourcing.popo"}
    )
    session_id = app.start_session(
        model="claude-test",
        context_window=window[0],
        max_output_tokens=window[1],
        system="You are an agent. Ünïcode 🧪.",
        tools=TOOLS,
        settings=knob,
    )
    bodies: list[dict[str, object]] = []
    overflows = 0
    for message in (
        [*messages, Message.user("What next?")] if messages[-1].role is Role.ASSISTANT else messages
    ):
        if message.role is Role.ASSISTANT:
            bodies.append(prepare(app, session_id))
        before = stored_version(app, session_id)
        try:
            if message.role is Role.ASSISTANT:
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
        except ContextTooSmallError:
            # An exchange no request of this window could hold (its signed thinking is
            # whole): no model could have answered it, so it is no conversation to replay.
            # The session refused it and wrote nothing.
            assert stored_version(app, session_id) == before
            reject()
    body = prepare(app, session_id)
    if body:
        bodies.append(body)
        # Prepared again with no new message (a host's retry): nothing more is decided or
        # written, and the same request goes out.
        version = stored_version(app, session_id)
        assert prepare(app, session_id) == body
        assert stored_version(app, session_id) == version
    overflows = sum(1 for b in bodies if not b)
    session = app.session(session_id)
    note(f"compactions: {min(session.generation, 3)}{'+' if session.generation > 3 else ''}")
    note(f"overflow errors: {'yes' if overflows else 'no'}")
    truncated = any(
        e.truncations for e in app.history(session_id) if isinstance(e, Session.MessageAppended)
    )
    note(f"tool output shown truncated: {'yes' if truncated else 'no'}")
    return app, session_id, bodies, overflows


def prepare(app: Sessions, session_id: UUID) -> dict[str, object]:
    before = stored_version(app, session_id)
    try:
        prepared = app.prepare_request(session_id)
    except ContextOverflowError as error:
        overflow = error
    else:
        return check_request(prepared, COUNTER, app.session(session_id).calibration)
    # Only a message that cannot fit alongside what must go with it may cause the error; it
    # names the message, and nothing is saved.
    assert overflow.position is not None
    assert overflow.tokens > 0
    assert stored_version(app, session_id) == before
    return {}


@PROPERTY
@given(conversations(), windows, knobs)
def test_every_request_is_valid_and_within_budget(
    messages: list[Message], window: tuple[int, int], knob: CompactionSettings
) -> None:
    app, session_id, bodies, _ = replay_live(messages, window, knob, ExtractiveSummarizer(COUNTER))

    # History is never rewritten: the appended messages are exactly those fed, in order.
    appended = [
        e.message for e in app.history(session_id) if isinstance(e, Session.MessageAppended)
    ]
    assert appended[: len(messages)] == messages
    # Thinking blocks go out exactly as recorded, or not at all.
    recorded = {
        b
        for m in messages
        for b in m.content
        if isinstance(b, ThinkingBlock | RedactedThinkingBlock)
    }
    for body in bodies:
        for message in body.get("messages", []):  # type: ignore[attr-defined]
            for block in message["content"]:
                if block["type"] == "thinking":
                    assert ThinkingBlock(block["thinking"], block["signature"]) in recorded
                if block["type"] == "redacted_thinking":
                    assert RedactedThinkingBlock(block["data"]) in recorded


@PROPERTY
@given(conversations(), windows, knobs)
def test_replaying_the_events_reproduces_the_state_and_every_decision(
    messages: list[Message], window: tuple[int, int], knob: CompactionSettings
) -> None:
    app, session_id, _, _ = replay_live(messages, window, knob, ExtractiveSummarizer(COUNTER))
    live = app.session(session_id)

    replayed = None
    for event in app.history(session_id):
        if isinstance(event, Session.CompactionThresholdHit):
            assert replayed is not None
            assert (
                planner.decide(replayed, event.decision.trigger, event.decision.extra_tokens)
                == event.decision
            )
        replayed = event.mutate(replayed)

    assert replayed is not None
    assert replayed.__dict__.keys() == live.__dict__.keys()
    for name, value in live.__dict__.items():
        if name != "_pending_events":
            assert getattr(replayed, name) == value, name


@PROPERTY
@given(conversations(), windows, st.integers(1, 50))
def test_a_failing_summarizer_loses_nothing_and_leaves_the_session_usable(
    messages: list[Message], window: tuple[int, int], failures: int
) -> None:
    knob = CompactionSettings(threshold_floor_tokens=0)
    app, session_id, _, _ = replay_live(messages, window, knob, FakeSummarizer(fail=failures))

    history = app.history(session_id)
    appended = [e.message for e in history if isinstance(e, Session.MessageAppended)]
    assert appended[: len(messages)] == messages
    completed = [e for e in history if isinstance(e, Session.CompactionCompleted)]
    failed = [e for e in history if isinstance(e, Session.CompactionFailed)]
    assert len([e for e in completed if e.strategy == "truncate"]) == len(failed)
