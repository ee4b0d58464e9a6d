"""`ReplyAccumulator` builds a streamed reply as the SDKs build it, so that the reply the
proxy records is the one its client sends back."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from abridged.adapters.http.sse import ReplyAccumulator, complete_events


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


def events(*items: dict[str, Any], line_end: str = "\n") -> bytes:
    return b"".join(
        f"event: {e['type']}{line_end}data: {json.dumps(e)}{line_end}{line_end}".encode()
        for e in items
    )


def long_reply(pieces: list[str]) -> list[dict[str, Any]]:
    """A thinking block, a cited text and a call, each streamed in `pieces`."""
    start = streamed()  # message_start … message_stop, no blocks
    first = json.loads(start.split(b"\n")[1][6:])
    blocks: list[tuple[dict[str, Any], str, str]] = [
        ({"type": "thinking", "thinking": "", "signature": ""}, "thinking_delta", "thinking"),
        ({"type": "text", "text": "Note: ", "citations": None}, "text_delta", "text"),
        ({"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}, "input_json_delta",
         "partial_json"),
    ]  # fmt: skip
    items: list[dict[str, Any]] = [first]
    for index, (block, kind, key) in enumerate(blocks):
        items.append({"type": "content_block_start", "index": index, "content_block": block})
        texts = [json.dumps({"said": "".join(pieces)})] if kind == "input_json_delta" else pieces
        items.extend(
            {"type": "content_block_delta", "index": index, "delta": {"type": kind, key: text}}
            for text in texts
        )
        if kind == "text_delta":
            items.extend(
                {"type": "content_block_delta", "index": index,
                 "delta": {"type": "citations_delta", "citation": {"n": n}}}
                for n in range(3)
            )  # fmt: skip
        if kind == "thinking_delta":
            items.append({"type": "content_block_delta", "index": index,
                          "delta": {"type": "signature_delta", "signature": "sig"}})  # fmt: skip
        items.append({"type": "content_block_stop", "index": index})
    items.append({"type": "message_stop"})
    return items


@given(
    pieces=st.lists(st.text(max_size=20), min_size=1, max_size=30),
    cuts=st.lists(st.integers(min_value=0), max_size=40),
    line_end=st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_a_reply_fed_in_any_pieces_is_the_reply_fed_whole(
    pieces: list[str], cuts: list[int], line_end: str
) -> None:
    data = events(*long_reply(pieces), line_end=line_end)
    at = sorted({cut % (len(data) + 1) for cut in cuts})
    accumulator = ReplyAccumulator()
    for start, end in zip([0, *at], [*at, len(data)], strict=True):
        accumulator.feed(data[start:end])

    assert accumulator.message is not None
    content = accumulator.message["content"]
    assert content[0] == {"type": "thinking", "thinking": "".join(pieces), "signature": "sig"}
    assert content[1] == {
        "type": "text",
        "text": "Note: " + "".join(pieces),
        "citations": [{"n": 0}, {"n": 1}, {"n": 2}],
    }
    assert content[2]["input"] == {"said": "".join(pieces)}


@given(
    pieces=st.lists(st.text(max_size=20), min_size=1, max_size=10),
    cuts=st.lists(st.integers(min_value=0), max_size=40),
    line_end=st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_a_stream_cut_anywhere_is_passed_on_event_by_event(
    pieces: list[str], cuts: list[int], line_end: str
) -> None:
    # As the proxy relays a stream: each piece it passes on ends where an event ends, and
    # nothing is held back once an event has ended. With CR line ends, none was seen to
    # end: the whole stream was held until the upstream closed it.
    data = events(*long_reply(pieces), line_end=line_end)
    at = sorted({cut % (len(data) + 1) for cut in cuts})
    pending, passed = bytearray(), 0
    for start, end in zip([0, *at], [*at, len(data)], strict=True):
        searched = max(len(pending) - 3, 0)
        pending += data[start:end]
        if whole := complete_events(pending, searched):
            passed += whole
            del pending[:whole]
            ended = data[:passed]
            # A CR that ends a piece may be the first half of a CRLF; it ends the event.
            assert ended.endswith(2 * line_end.encode()) or ended.endswith(b"\r\n\r")
    # All of it, but the LF of a last CRLF that came alone (passed on with the stream's end).
    assert data[passed:] in (b"", b"\n" if line_end == "\r\n" else b"")
