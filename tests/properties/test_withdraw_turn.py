"""Withdrawing the last turn, over generated conversations.

A conversation runs through the service; after one of its turns (a user prompt and what
followed it, perhaps a tool loop led by thinking, perhaps cut mid-loop) the host withdraws
it, then the conversation goes on without it. Whatever the settings and the model:

- the withdrawal is refused, writing nothing, exactly when no user prompt is in view;
- after it, the indexes equal a recomputation, and a replay of the events equals the live
  state;
- every later request is valid and within the budget;
- when nothing but the turn's own messages was recorded since its prompt, every later request
  is byte for byte the one a session that never had the turn sends.
"""

from __future__ import annotations

from uuid import UUID

from hypothesis import event as note
from hypothesis import given
from hypothesis import strategies as st

from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.application.service import Sessions
from abridged.domain.errors import TurnNotWithdrawableError
from abridged.domain.indexes import INDEX_NAMES
from abridged.domain.messages import Message, Role, TextBlock, ToolResultBlock
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.properties.strategies import TOOLS, conversations
from tests.properties.test_indexes import assert_indexes_hold
from tests.properties.test_invariants import COUNTER, PROPERTY, knobs, prepare, windows
from tests.support.checks import stored_version

MODELS = st.sampled_from(["claude-test", "claude-fable-5-1"])
"""A model that does not bind thinking to its prefix, and one that does."""


def turns(messages: list[Message]) -> list[list[Message]]:
    """The conversation cut at each user prompt."""
    cut: list[list[Message]] = []
    for message in messages:
        if message.is_user_prompt or not cut:
            cut.append([])
        cut[-1].append(message)
    return cut


def feed(app: Sessions, session_id: UUID, messages: list[Message]) -> list[dict[str, object]]:
    """Appends the messages, preparing a request before each reply (as a host does)."""
    bodies = []
    for message in messages:
        if message.role is Role.ASSISTANT:
            bodies.append(prepare(app, session_id))
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
    return bodies


def started(model: str, window: tuple[int, int], knob: CompactionSettings) -> tuple[Sessions, UUID]:
    app = Sessions(
        counter=COUNTER,
        summarizer=ExtractiveSummarizer(COUNTER),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        background=False,
    )
    session_id = app.start_session(
        model=model,
        context_window=window[0],
        max_output_tokens=window[1],
        system="You are an agent. Ünïcode 🧪.",
        tools=TOOLS,
        settings=knob,
    )
    return app, session_id


def ended(messages: list[Message]) -> list[Message]:
    """The messages, ending with a user message so that a request can be built."""
    if messages and messages[-1].role is Role.ASSISTANT:
        return [*messages, Message.user("What next?")]
    return messages


def resumed(app: Sessions, session_id: UUID) -> list[Message]:
    """What a host sends after a withdrawal, by what the view now ends with: a reply to a
    user message, the results of a reply's calls again, or nothing after a finished reply."""
    session = app.session(session_id)
    if not session.entries:
        return []
    last = session.entries[-1].message
    if last.role is Role.ASSISTANT and last.tool_uses:
        results = [ToolResultBlock(u.id, "done, another way") for u in last.tool_uses]
        return [Message.user(*results), Message.assistant(TextBlock("Done."))]
    if last.role is not Role.ASSISTANT:
        return [Message.assistant(TextBlock("Let me answer that again."))]
    return []


@PROPERTY
@given(conversations(max_turns=4), windows, knobs, MODELS, st.data())
def test_withdrawing_the_end_leaves_a_valid_session_as_if_it_never_was(
    messages: list[Message],
    window: tuple[int, int],
    knob: CompactionSettings,
    model: str,
    data: st.DataObject,
) -> None:
    cut = turns(messages)
    k = data.draw(st.integers(0, len(cut) - 1), label="turn")
    # The turn may have its reply recorded, or end awaiting one (a refusal, an edit).
    before, turn = [m for t in cut[:k] for m in t], cut[k]
    after = [m for t in cut[k + 1 :] for m in t] or [Message.user("Let us try another way.")]

    app, session_id = started(model, window, knob)
    feed(app, session_id, before)
    mark, first = stored_version(app, session_id), app.session(session_id).message_count
    feed(app, session_id, turn)
    if turn[-1].role is Role.USER:
        prepare(app, session_id)  # the request the model refused, or the user took back
    session = app.session(session_id)
    in_view = [p for p in session.prompt_positions if p >= session.retained_from]
    position = data.draw(
        st.none() | st.integers(session.retained_from, session.message_count - 1),
        label="position",
    )
    start = (in_view[-1] if in_view else None) if position is None else position
    version = stored_version(app, session_id)
    try:
        count = app.withdraw_turn(session_id, position=position, reason="refused")
    except TurnNotWithdrawableError:
        note("withdrawal refused")
        assert start is None
        assert stored_version(app, session_id) == version
        return
    note(f"withdrawn from {'the prompt' if position is None else 'a position'}")
    assert start is not None
    assert count == session.message_count - start

    live = app.session(session_id)
    assert live.message_count == start
    assert [e.position for e in live.entries] == [
        e.position for e in session.entries if e.position < start
    ]
    assert_indexes_hold(live)
    replayed: Session | None = None
    for event in app.history(session_id):
        replayed = event.mutate(replayed)
    assert replayed is not None
    for name in (*INDEX_NAMES, "entry_versions", "message_count", "tail_tokens", "entries"):
        assert getattr(replayed, name) == getattr(live, name), name
    assert replayed.queued_system == live.queued_system

    again = resumed(app, session_id)
    later = feed(app, session_id, ended([*again, *after]))
    later.append(prepare(app, session_id))  # each one checked valid and within the budget
    recorded = [e for e in app.history(session_id) if mark < e.originator_version <= version]
    if not all(isinstance(e, Session.MessageAppended) for e in recorded) or start < first:
        note("compacted or pruned during the turn")
        return
    note("the turn added only its messages")
    # A session that never had the withdrawn messages sends the very same requests.
    twin, twin_id = started(model, window, knob)
    feed(twin, twin_id, [*before, *turn[: start - first]])
    if turn[: start - first] and turn[start - first - 1].role is Role.USER:
        prepare(twin, twin_id)
    expected = feed(twin, twin_id, ended([*again, *after]))
    expected.append(prepare(twin, twin_id))
    assert later == expected
