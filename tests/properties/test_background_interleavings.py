"""Background compaction, held over generated conversations and interleavings.

A background compaction is decided after some reply, and its summary applied any number of
messages later (requests, prunes and threshold compactions happen in between). Whatever the
interleaving: every request is valid and within budget, the messages appended meanwhile stay
in the tail, each background decision ends applied or discarded, history is never rewritten,
and replaying the events reproduces the live state.
"""

from __future__ import annotations

from hypothesis import event as note
from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.application.background import PlannedCompaction
from abridged.application.service import Sessions
from abridged.domain import planner
from abridged.domain.errors import ContextOverflowError
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.properties.strategies import TOOLS, conversations
from tests.properties.test_invariants import PROPERTY
from tests.support.checks import check_request
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

COUNTER = FakeTokenCounter()

knobs = st.builds(
    CompactionSettings,
    threshold_ratio=st.floats(0.5, 1.0),
    background_threshold_ratio=st.floats(0.2, 0.6),
    threshold_floor_tokens=st.integers(0, 2_000),
    keep_recent_turns=st.integers(0, 4),
    tool_output_mode=st.sampled_from(["auto", "keep_all"]),
    cooldown_messages=st.integers(0, 6),
)


@settings(PROPERTY, max_examples=20)
@given(
    messages=conversations(max_turns=4),
    window=st.tuples(st.integers(3_000, 12_000), st.integers(200, 1_000)),
    knob=knobs,
    delays=st.lists(st.integers(0, 8), min_size=1, max_size=20),
)
def test_any_interleaving_keeps_requests_valid_and_replay_exact(
    messages: list[Message],
    window: tuple[int, int],
    knob: CompactionSettings,
    delays: list[int],
) -> None:
    app = Sessions(
        counter=COUNTER,
        summarizer=FakeSummarizer("The agent ran the tools and read the files."),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        background=False,  # the test steps the compaction itself, in a chosen interleaving
    )
    session_id = app.start_session(
        model="claude-test",
        context_window=window[0],
        max_output_tokens=window[1],
        tools=TOOLS,
        settings=knob,
    )
    pending: tuple[PlannedCompaction, int] | None = None
    outcomes = {"applied": 0, "discarded": 0}

    def apply(planned: PlannedCompaction) -> None:
        written = app.background.write(planned)
        report = app.background.apply(session_id, planned, written)
        session = app.session(session_id)
        if report is None:
            outcomes["discarded"] += 1
            return
        outcomes["applied"] += 1
        positions = [e.position for e in session.entries]
        # The cut is where it was decided; everything appended since is in the tail.
        assert positions == list(range(planned.decision.retained_from, session.message_count))

    def prepare() -> None:
        try:
            prepared = app.prepare_request(session_id)
        except ContextOverflowError as error:
            overflow = error
        else:
            check_request(prepared, COUNTER, app.session(session_id).calibration)
            return
        assert overflow.position is not None  # only a message too large for any request

    fed = (
        [*messages, Message.user("What next?")] if messages[-1].role is Role.ASSISTANT else messages
    )
    for message in fed:
        if message.role is Role.ASSISTANT:
            prepare()
            app.record_reply(session_id, message)
            if pending is None and planner.background_due(app.session(session_id)):
                planned = app.background.plan(session_id)
                if planned is not None:
                    pending = (planned, delays[0])
                    delays = delays[1:] or delays
        else:
            app.append_message(session_id, message)
        if pending is not None:
            planned, wait = pending
            if wait == 0:
                apply(planned)
                pending = None
            else:
                pending = (planned, wait - 1)
    if pending is not None:
        apply(pending[0])
    prepare()

    history = app.history(session_id)
    note(
        f"background applied: {min(outcomes['applied'], 2)}, discarded: {outcomes['discarded'] > 0}"
    )
    appended = [e.message for e in history if isinstance(e, Session.MessageAppended)]
    assert appended == fed
    for index, event in enumerate(history):
        if (
            isinstance(event, Session.CompactionThresholdHit)
            and event.decision.trigger == "background"
        ):
            ends = [
                e
                for e in history[index + 1 :]
                if isinstance(e, Session.CompactionCompleted | Session.CompactionDiscarded)
                and e.retained_from == event.decision.retained_from
            ]
            assert ends, "a background decision neither applied nor discarded"
    replayed = None
    for event in history:
        replayed = event.mutate(replayed)
    assert isinstance(replayed, Session)
    assert vars(replayed) == vars(app.session(session_id))
