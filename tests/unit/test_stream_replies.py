"""`ReplyAccumulator` builds a streamed reply as the SDKs build it, so that the reply the
proxy records is the one its client sends back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from abridged.adapters.http.sse import ReplyAccumulator


def streamed(*blocks: tuple[dict[str, Any], list[str]]) -> bytes:
    """A reply's events: each block's `content_block_start`, then its input's JSON pieces."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": "claude-opus-4-8", "content": [],
            "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}}},
    ]  # fmt: skip
    for index, (block, pieces) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events.extend(
            {"type": "content_block_delta", "index": index,
             "delta": {"type": "input_json_delta", "partial_json": piece}}
            for piece in pieces
        )  # fmt: skip
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_stop"})
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


@pytest.mark.parametrize("kind", ["tool_use", "server_tool_use", "mcp_tool_use"])
def test_a_call_whose_input_comes_whole_keeps_it(kind: str) -> None:
    # A gateway may send a call's input in its start, with no delta (or an empty one).
    block = {"type": kind, "id": "call_1", "name": "search", "input": {"query": "q0"}}
    for pieces in ([], [""]):
        accumulator = ReplyAccumulator()
        accumulator.feed(streamed((block, pieces)))
        assert accumulator.message is not None
        assert accumulator.message["content"] == [block]


def test_a_call_whose_input_streams_takes_the_deltas_json() -> None:
    start = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    accumulator = ReplyAccumulator()
    accumulator.feed(streamed((start, ['{"query": ', '"csv bug"}'])))
    assert accumulator.message is not None
    assert accumulator.message["content"] == [{**start, "input": {"query": "csv bug"}}]


def test_a_call_whose_start_names_no_input_gets_an_empty_one() -> None:
    start = {"type": "tool_use", "id": "toolu_1", "name": "list_files"}
    accumulator = ReplyAccumulator()
    accumulator.feed(streamed((start, [])))
    assert accumulator.message is not None
    assert accumulator.message["content"] == [{**start, "input": {}}]
