"""What a host passes in: dicts, `Message`s, or objects with the SDK's serializers."""

from __future__ import annotations

from typing import Any

import pytest

from abridged.application.service import Sessions
from abridged.domain.errors import MalformedBlockError
from abridged.domain.messages import Message, TextBlock
from abridged.domain.session import Session
from abridged.domain.usage import Usage


class Model:
    """Stands in for a pydantic model of the SDK: only its `to_dict` is read."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        return self.data

    def __getattr__(self, name: str) -> Any:
        try:
            return self.data[name]
        except KeyError:
            raise AttributeError(name) from None


def test_a_reply_as_a_dict_brings_its_usage(app: Sessions) -> None:
    session_id = app.start_session(model="m", context_window=10_000, max_output_tokens=1_000)
    app.append_message(session_id, Message.user("Hi"))
    reply = {
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello", "citations": None}],
        "usage": {"input_tokens": 12, "output_tokens": 3, "cache_read_input_tokens": None},
    }

    app.record_reply(session_id, reply)

    event = app.history(session_id)[-1]
    assert isinstance(event, Session.MessageAppended)
    assert event.usage == Usage(input_tokens=12, output_tokens=3)
    assert event.message == Message.assistant(TextBlock("Hello"))


def test_nested_model_objects_are_read_by_their_api_form(app: Sessions) -> None:
    session_id = app.start_session(model="m", context_window=10_000, max_output_tokens=1_000)
    app.append_message(session_id, Message.user("Hi"))
    blocks = [Model({"type": "text", "text": "Hello"})]

    app.record_reply(
        session_id,
        Model({"role": "assistant", "content": blocks}),
        usage=Model({"input_tokens": 7, "output_tokens": 1}),
    )

    event = app.history(session_id)[-1]
    assert isinstance(event, Session.MessageAppended)
    assert event.usage == Usage(input_tokens=7, output_tokens=1)


@pytest.mark.parametrize(
    ("message", "usage", "match"),
    [
        (42, None, "must be an object or an SDK message"),
        ({"role": "assistant", "content": "ok"}, {"input_tokens": "12"}, "whole number"),
        ({"role": "assistant", "content": "ok"}, [1, 2], "usage must be an object"),
    ],
)
def test_what_cannot_be_read_is_a_typed_error_and_nothing_is_written(
    app: Sessions, message: Any, usage: Any, match: str
) -> None:
    session_id = app.start_session(model="m", context_window=10_000, max_output_tokens=1_000)
    app.append_message(session_id, Message.user("Hi"))
    before = len(app.history(session_id))

    with pytest.raises(MalformedBlockError, match=match):
        app.record_reply(session_id, message, usage=usage)

    assert len(app.history(session_id)) == before
