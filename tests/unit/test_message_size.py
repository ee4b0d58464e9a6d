"""A message's size is the same whether it is encoded for the check or taken from the JSON
text encoded once for its digest and its event (`encoded_size`'s `compact`)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.application.transcodings import encodable_json
from abridged.domain.errors import UnencodableContentError
from abridged.domain.inputs import check_message_size, encoded_size
from abridged.domain.messages import JSON, Message

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
