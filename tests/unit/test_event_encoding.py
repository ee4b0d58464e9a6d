"""A large message's event is encoded with its text spliced in: the same bytes as encoding
the whole state, whatever the text holds."""

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

    assert encode_state(splicing(), state) == transcoder().encode(state)


def test_every_character_below_128_survives_the_splice() -> None:
    text = "".join(chr(c) for c in range(128)) * (KEPT_TEXT_CHARS // 128 + 1)
    state = state_of(large(text), note='a "quoted" note \\ with a backslash')

    assert encode_state(splicing(), state) == transcoder().encode(state)


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

    assert encode_state(splicing(), state) == transcoder().encode(state)
