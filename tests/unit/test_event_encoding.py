"""A large message's event holds the message's JSON itself, spliced in unescaped, and reads
back as the same message whatever the text holds; a message whose JSON holds the
transcoder's own `_type_` key is stored as a string, as every other message is."""

from __future__ import annotations

from typing import Any

from eventsourcing.persistence import JSONTranscoder
from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.application import transcodings
from abridged.application.inputs import as_message
from abridged.application.transcodings import (
    KEPT_TEXT_CHARS,
    encode_state,
    message_json,
    register_transcodings,
)
from abridged.domain.messages import Message


def transcoder() -> JSONTranscoder:
    made = JSONTranscoder()
    register_transcodings(made)
    return made


def splicing() -> JSONTranscoder:
    """A transcoder that fails when the state is encoded whole: the splice must be taken."""
    made = transcoder()

    def whole(obj: Any) -> bytes:
        raise AssertionError("encoded whole")

    made.encode = whole  # type: ignore[method-assign]
    return made


ODD = ['"', "\\", '\\"', "\n", "\t", "\x00", "\x1f", "\x7f", "\u2028", "é", "日本", "🧑‍💻", "'"]


def large(text: str) -> Message:
    message = as_message(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": text},
                {"type": "text", "text": 'and "this" \\ too'},
            ],
        }
    )
    assert len(message_json(message)) >= KEPT_TEXT_CHARS
    return message


def state_of(message: Message, **more: Any) -> dict[str, Any]:
    return {"message": message, "tokens": (12, 3), "usage": None, "model": "m", **more}


@settings(max_examples=40, deadline=None)
@given(parts=st.lists(st.one_of(st.sampled_from(ODD), st.text(max_size=30)), min_size=1))
def test_a_large_message_is_encoded_as_the_transcoder_would(parts: list[str]) -> None:
    chunk = "".join(parts)
    text = (chunk or "x") * (KEPT_TEXT_CHARS // max(len(chunk), 1) + 1)
    state = state_of(large(text))

    assert_stored_as_json(state)


def assert_stored_as_json(state: dict[str, Any]) -> None:
    """The state encodes with its message's JSON verbatim, and reads back as it was."""
    encoded = encode_state(splicing(), state)
    assert message_json(state["message"]).encode() in encoded
    assert b'"_type_":"message_wire"' in encoded
    decoded = transcoder().decode(encoded)
    assert decoded == {**state, "tokens": list(state["tokens"])}
    assert message_json(decoded["message"]) == message_json(state["message"])


def test_every_character_below_128_survives_the_splice() -> None:
    text = "".join(chr(c) for c in range(128)) * (KEPT_TEXT_CHARS // 128 + 1)
    state = state_of(large(text), note='a "quoted" note \\ with a backslash')

    assert_stored_as_json(state)


def test_a_message_holding_the_transcoders_own_key_is_stored_as_a_string() -> None:
    # As JSON itself, its tool input would read back as a stored `usage`, not as the input.
    posing = {"_type_": "usage", "_data_": {"input_tokens": 1, "output_tokens": 2}}
    message = as_message(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "x" * KEPT_TEXT_CHARS},
                {"type": "tool_use", "id": "toolu_1", "name": "record", "input": {"u": posing}},
            ],
        }
    )
    message_json(message)  # kept, as the proxy keeps it
    state = state_of(message)

    encoded = encode_state(transcoder(), state)
    assert encoded == transcoder().encode(state)
    assert transcoder().decode(encoded)["message"] == message


def test_a_small_message_is_encoded_as_usual() -> None:
    small = as_message({"role": "user", "content": "hello"})
    state = state_of(small)

    assert encode_state(transcoder(), state) == transcoder().encode(state)


def test_the_stand_in_found_elsewhere_falls_back_to_the_usual_encoding() -> None:
    message = large("line\n" * KEPT_TEXT_CHARS)
    state = state_of(message, model=transcodings._SPLICE)

    assert encode_state(transcoder(), state) == transcoder().encode(state)


def test_a_transcoder_escaping_non_ascii_encodes_as_usual() -> None:
    ascii_only = transcoder()
    ascii_only.encoder.ensure_ascii = True
    state = state_of(large("é\n" * KEPT_TEXT_CHARS))

    assert encode_state(ascii_only, state) == ascii_only.encode(state)


def test_a_message_holding_the_stand_in_is_spliced_whole() -> None:
    message = large(f'"{transcodings._SPLICE}"\n' * (KEPT_TEXT_CHARS // 40))
    state = state_of(message)

    assert_stored_as_json(state)
