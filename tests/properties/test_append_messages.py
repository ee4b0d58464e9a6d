"""`append_messages`: several messages in one write are the same as one by one.

Over generated conversations (parallel calls, thinking, huge outputs, odd unicode) at small
windows with random settings: the events, the state and the next request are those of
`append_message` called for each; a message refused one by one is refused in the batch,
with the same error, and then nothing of the batch is written.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.application.service import Sessions
from abridged.domain.errors import SessionError
from abridged.domain.messages import Message, ToolResultBlock
from abridged.domain.settings import CompactionSettings
from tests.properties.strategies import TOOLS, conversations
from tests.properties.test_invariants import COUNTER, PROPERTY, knobs, windows
from tests.support.checks import stored_version


def started(window: tuple[int, int], knob: CompactionSettings) -> tuple[Sessions, UUID]:
    app = Sessions(
        counter=COUNTER,
        summarizer=ExtractiveSummarizer(COUNTER),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model="claude-test",
        context_window=window[0],
        max_output_tokens=window[1],
        system="You are an agent. Ünïcode 🧪.",
        tools=TOOLS,
        settings=knob,
    )
    return app, session_id


def recorded(app: Sessions, session_id: UUID) -> list[tuple[Any, ...]]:
    """What each event says, without its id and time."""
    return [
        (
            type(event).__name__,
            getattr(event, "message", None),
            getattr(event, "tokens", None),
            getattr(event, "block_tokens", None),
            getattr(event, "truncations", None),
            getattr(event, "saving", None),
        )
        for event in app.history(session_id)
    ]


def next_request(app: Sessions, session_id: UUID) -> object:
    try:
        prepared = app.prepare_request(session_id)
    except SessionError as error:
        return type(error)
    return prepared.context.messages


ORPHAN = Message.user(ToolResultBlock("toolu_never_called", "a result for no call"))
"""A message no session accepts: its result answers no call."""


@PROPERTY
@given(conversations(), windows, knobs, st.booleans(), st.integers(0, 60))
def test_appending_several_in_one_write_is_appending_them_one_by_one(
    messages: list[Message],
    window: tuple[int, int],
    knob: CompactionSettings,
    orphan: bool,
    at: int,
) -> None:
    if orphan:
        messages = [*messages]
        messages.insert(min(at, len(messages)), ORPHAN)
    one, one_id = started(window, knob)
    refused: tuple[int, SessionError] | None = None
    for index, message in enumerate(messages):
        try:
            one.append_message(one_id, message)
        except SessionError as error:
            refused = (index, error)
            break
    event(f"refused one by one: {'no' if refused is None else type(refused[1]).__name__}")
    batch, batch_id = started(window, knob)
    before = stored_version(batch, batch_id)

    if refused is None:
        positions = batch.append_messages(batch_id, messages)

        assert positions == tuple(range(len(messages)))
        assert recorded(batch, batch_id) == recorded(one, one_id)
        assert batch.session(batch_id).entries == one.session(one_id).entries
        assert next_request(batch, batch_id) == next_request(one, one_id)
        return
    at, alone = refused
    with pytest.raises(type(alone)) as raised:
        batch.append_messages(batch_id, messages)

    assert str(raised.value) == str(alone)
    assert f"message {at} of {len(messages)}" in "".join(raised.value.__notes__)
    assert stored_version(batch, batch_id) == before
    assert len(batch.session(batch_id).entries) == 0
