"""A streamed reply reaches the proxy in pieces cut anywhere by the network: inside a UTF-8
character, between an event's `event:` and `data:` lines, between the `\\r` and the `\\n` of
a CRLF line end. The client gets the stream as the upstream sent it, and the reply recorded
is the one the events make, whatever the cuts."""

from __future__ import annotations

import json
from typing import Any

import attrs
import httpx2
import pytest

from abridged.application.service import Sessions
from abridged.domain.events import MessageAppended
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic

MODEL = "claude-sonnet-4-6"
TEXT = "Le débogueur a trouvé l'erreur ✓"


def events(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": MODEL, "content": [], "stop_reason": None,
            "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "ping"},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]  # fmt: skip


def encoded(line_end: str) -> bytes:
    return "".join(
        f"event: {e['type']}{line_end}data: {json.dumps(e, ensure_ascii=False)}{line_end * 2}"
        for e in events(TEXT)
    ).encode()


def recorded(store: Sessions) -> list[dict[str, Any]]:
    (info,) = store.list_sessions().sessions
    return [e.message.to_wire() for e in store.history(info.id) if isinstance(e, MessageAppended)]


def cuts(stream: bytes) -> dict[str, tuple[int, ...]]:
    """Where a network may cut the stream, each a tuple of offsets."""
    inside_character = stream.index("✓".encode()) + 1
    between_lines = stream.index(b"data:", stream.index(b"event: content_block_delta"))
    before_last_lf = len(stream) - 1  # the blank line's "\n" (or "\r\n"'s) comes alone
    line_ends = tuple(i + 1 for i in range(len(stream) - 1) if stream[i : i + 2] == b"\r\n")
    return {
        "inside a UTF-8 character": (inside_character,),
        "between event and data": (between_lines,),
        "before the last line feed": (before_last_lf,),
        "between every CR and LF": line_ends[-12:],
    }


@pytest.mark.parametrize(
    ("line_end", "where"),
    [
        *[
            (line_end, where)
            for line_end in ("\n", "\r\n")
            for where in (
                "inside a UTF-8 character",
                "between event and data",
                "before the last line feed",
            )
        ],
        ("\r\n", "between every CR and LF"),
    ],
)
def test_a_stream_cut_anywhere_passes_whole_and_is_recorded(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions, line_end: str, where: str
) -> None:
    stream = encoded(line_end)
    upstream = fake.malformed(stream, "text/event-stream; charset=utf-8")
    fake_anthropic.enqueue(attrs.evolve(upstream, splits=cuts(stream)[where]))
    body = {
        "model": MODEL,
        "max_tokens": 50,
        "stream": True,
        "messages": [{"role": "user", "content": "Où est l'erreur ?"}],
    }
    answer = httpx2.post(f"{proxy}/v1/messages", json=body, headers={"x-api-key": TEST_API_KEY})
    assert answer.content == stream  # nothing added: no "broke off" error after a whole reply
    assert recorded(store)[1] == {"role": "assistant", "content": [{"type": "text", "text": TEXT}]}
