"""`defer_compaction` over generated conversations (tool calls, parallel calls, thinking, huge
outputs, odd unicode), with the background compactions it starts running on their thread
while the conversation goes on, waited for at drawn moments: every request is valid and
within budget, every message appended is stored once and in order, each background decision
ends applied or discarded, the audit re-derives every decision, and replaying the events
reproduces the live state."""

from __future__ import annotations

from hypothesis import event as note
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from abridged.application.auditing import audit_events
from abridged.application.service import Sessions
from abridged.domain.errors import ContextOverflowError, ContextTooSmallError
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
    threshold_ratio=st.floats(0.3, 0.9),
    threshold_floor_tokens=st.integers(0, 2_000),
    keep_recent_turns=st.integers(0, 4),
    tool_output_mode=st.sampled_from(["auto", "keep_all"]),
    cooldown_messages=st.integers(0, 6),
)


@settings(PROPERTY, max_examples=20)
@given(
    messages=conversations(max_turns=6),
    window=st.tuples(st.integers(3_000, 8_000), st.integers(200, 1_000)),
    knob=knobs,
    waits=st.lists(st.booleans(), min_size=1, max_size=30),
)
def test_requests_stay_valid_and_replay_exact_while_compactions_run_behind(
    messages: list[Message],
    window: tuple[int, int],
    knob: CompactionSettings,
    waits: list[bool],
) -> None:
    app = Sessions(
        counter=COUNTER,
        summarizer=FakeSummarizer("The agent ran the tools and read the files."),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        defer_compaction=True,
    )
    session_id = app.start_session(
        model="claude-test",
        context_window=window[0],
        max_output_tokens=window[1],
        tools=TOOLS,
        settings=knob,
    )
    deferred = 0

    def prepare() -> None:
        nonlocal deferred
        try:
            prepared = app.prepare_request(session_id)
        except ContextOverflowError as error:
            overflow = error
        else:
            check_request(prepared, COUNTER, app.session(session_id).calibration)
            deferred += any(n.kind == "compaction_deferred" for n in prepared.notices)
            return
        assert overflow.position is not None  # only a message too large for any request

    fed = (
        [*messages, Message.user("What next?")] if messages[-1].role is Role.ASSISTANT else messages
    )
    for index, message in enumerate(fed):
        try:
            if message.role is Role.ASSISTANT:
                prepare()
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
        except ContextTooSmallError:
            reject()  # an exchange no request of this window holds: no conversation had it
        if waits[index % len(waits)]:
            app.background.wait()
    prepare()
    app.background.wait()
    prepare()
    note(f"deferred: {min(deferred, 2)}")

    history = app.history(session_id)
    assert [e.message for e in history if isinstance(e, Session.MessageAppended)] == fed
    for index, event in enumerate(history):
        if (
            isinstance(event, Session.CompactionThresholdHit)
            and event.decision.trigger == "background"
        ):
            assert any(
                isinstance(e, Session.CompactionCompleted | Session.CompactionDiscarded)
                and e.retained_from == event.decision.retained_from
                for e in history[index + 1 :]
            ), "a background decision neither applied nor discarded"
    audited = audit_events(history)
    assert audited.ok, [(f.event, f.detail) for f in audited.mismatches]
    replayed = None
    for event in history:
        replayed = event.mutate(replayed)
    assert isinstance(replayed, Session)
    assert vars(replayed) == vars(app.session(session_id))
    app.close()
