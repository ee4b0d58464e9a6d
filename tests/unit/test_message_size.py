"""A message's size is the same whether it is encoded for the check or taken from the JSON
text encoded once for its digest and its event (`encoded_size`'s `compact`)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.application.service import Sessions
from abridged.application.transcodings import encodable_json
from abridged.domain.errors import UnencodableContentError
from abridged.domain.inputs import check_message_size, encoded_size
from abridged.domain.messages import JSON, Message
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


def compact(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@settings(max_examples=200, deadline=None)
@given(value=values)
def test_the_size_from_the_compact_text_is_the_size_encoded_again(value: JSON) -> None:
    try:
        expected = encoded_size(value, "the value")
    except UnencodableContentError as error:  # a lone surrogate drawn in a text
        with pytest.raises(UnencodableContentError, match=str(error)):
            encoded_size(value, "the value", compact(value))
        return

    assert encoded_size(value, "the value", compact(value)) == expected


@settings(max_examples=100, deadline=None)
@given(text=st.text(), arguments=st.dictionaries(st.text(), values, max_size=3))
def test_a_message_s_size_is_checked_from_the_json_its_event_stores(
    text: str, arguments: dict[str, JSON]
) -> None:
    message = Message.from_wire(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": text or "-"},
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": arguments},
            ],
        }
    )
    try:
        expected = check_message_size(message, 10**9)
    except UnencodableContentError:
        return

    assert check_message_size(message, 10**9, encodable_json(message)) == expected


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "\ud800"])
def test_what_json_cannot_carry_is_refused_in_the_same_words(bad: JSON) -> None:
    value: JSON = {"a": [1, {"b": bad}]}
    with pytest.raises(UnencodableContentError) as slow:
        encoded_size(value, "the value")
    with pytest.raises(UnencodableContentError) as fast:
        encoded_size(value, "the value", compact(value))

    assert str(fast.value) == str(slow.value)


@pytest.mark.parametrize(
    "tool_input",
    [{1: "a"}, {"a": {True: 1}}, {"a": [{None: 1}]}, {1: "a", "1": "b"}],
    ids=["int", "bool nested", "none in a list", "int beside its string"],
)
def test_a_tool_input_with_a_key_json_would_turn_into_a_string_is_refused(
    tool_input: dict[object, JSON],
) -> None:
    """JSON writes `{1: "a"}` as `{"1": "a"}`: stored, the session would send one input and,
    loaded again, another; `{1: "a", "1": "b"}` would carry the key twice."""
    app = Sessions(
        counter=FakeTokenCounter(),
        summarizer=FakeSummarizer("summary"),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    tools = [{"name": "f", "input_schema": {"type": "object"}}]
    session_id = app.start_session(model="claude-test", max_output_tokens=500, tools=tools)
    app.append_message(session_id, Message.user("Go."))
    count = len(app.history(session_id))
    call = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": tool_input}
    with pytest.raises(UnencodableContentError, match="key that is not a string"):
        app.record_reply(session_id, {"role": "assistant", "content": [call]})
    assert len(app.history(session_id)) == count
    schema = {"type": "object", "properties": {1: {"type": "string"}}}
    with pytest.raises(UnencodableContentError, match="key that is not a string"):
        app.start_session(
            model="claude-test",
            max_output_tokens=500,
            tools=[{"name": "g", "input_schema": schema}],
        )
