"""A streamed reply that breaks off: the client is told (its SDK raises instead of taking a
half reply as whole), nothing half is recorded, and the session takes the next request."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from abridged.application.service import Sessions
from abridged.domain.events import MessageAppended
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import FakeAnthropic

MODEL = "claude-sonnet-4-6"


def roles(store: Sessions) -> list[str]:
    (info,) = store.list_sessions().sessions
    return [
        e.message.to_wire()["role"]
        for e in store.history(info.id)
        if isinstance(e, MessageAppended)
    ]


@pytest.mark.parametrize(
    "broken",
    [fake.dropped_stream("A long partial answer " * 20), fake.overloaded_midstream()],
    ids=["connection dropped", "error event"],
)
def test_a_stream_that_breaks_off_is_an_error_and_the_session_goes_on(
    client: anthropic.Anthropic,
    fake_anthropic: FakeAnthropic,
    store: Sessions,
    broken: fake.Response,
) -> None:
    history: list[Any] = [{"role": "user", "content": "Why does the export drop a row?"}]
    fake_anthropic.enqueue(broken)
    with (
        pytest.raises(anthropic.APIError),
        client.messages.stream(model=MODEL, max_tokens=500, messages=history) as stream,
    ):
        stream.get_final_message()
    assert roles(store) == ["user"]  # no half reply

    # The client tries again with the same history: answered and recorded once.
    with client.messages.stream(model=MODEL, max_tokens=500, messages=history) as stream:
        reply = stream.get_final_message()
    assert reply.stop_reason is not None
    assert roles(store) == ["user", "assistant"]
    assert store.stats(store.list_sessions().sessions[0].id).requests == 1
