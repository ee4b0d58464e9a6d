"""A streamed reply reaches the proxy in pieces cut anywhere by the network: inside a UTF-8
character, between an event's `event:` and `data:` lines, between the `\\r` and the `\\n` of
a CRLF line end. The client gets the stream as the upstream sent it, and the reply recorded
is the one the events make, whatever the cuts."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import attrs
import httpx2
import pytest

from abridged.adapters.http.sse import BROKEN_OFF
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
            for line_end in ("\n", "\r\n", "\r")
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


@pytest.mark.parametrize("line_end", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_a_stream_that_breaks_off_passes_its_whole_events_on_then_an_error(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions, line_end: str
) -> None:
    # The events before the break reach the client, and the error event follows them. With
    # CR line ends (which server-sent events allow) no event was seen to end: the stream was
    # held whole until it ended, and dropped when it broke off, the error event alone sent.
    stream = encoded(line_end)
    broken = stream[: stream.index(b"event: message_delta")]  # whole events, no message_stop
    fake_anthropic.enqueue(fake.malformed(broken, "text/event-stream; charset=utf-8"))
    body = {
        "model": MODEL,
        "max_tokens": 50,
        "stream": True,
        "messages": [{"role": "user", "content": "Où est l'erreur ?"}],
    }
    answer = httpx2.post(f"{proxy}/v1/messages", json=body, headers={"x-api-key": TEST_API_KEY})
    assert answer.content == broken + BROKEN_OFF
    assert len(recorded(store)) == 1  # the question; no reply


FALLBACK = {
    "type": "fallback",
    "from": {"model": "claude-fable-5"},
    "to": {"model": "claude-opus-4-8"},
    "trigger": {"type": "refusal", "category": "cyber"},
}
DROPPED = [{"type": "thinking_dropped", "message_index": 1, "block_index": 0}]
FIRST = {"type": "thinking", "thinking": "First look.", "signature": "sig-first"}
SECOND = {"type": "thinking", "thinking": "Second look.", "signature": "sig-second"}
COMPACTION = {"type": "compaction", "content": "Summary so far.", "encrypted_content": "enc-1"}
TEXT_BLOCK = {"type": "text", "text": "Here it is."}

REPLIES: dict[str, tuple[list[Any], str, list[Any]]] = {
    # A reply a server-side fallback finished: unstreamed, it is labelled with the model
    # that served it, and carries that model's input transformations.
    "fallback": ([FIRST, FALLBACK, SECOND, TEXT_BLOCK], "claude-opus-4-8", DROPPED),
    # A threshold compaction's reply: its block streams as `compaction_delta`.
    "compaction": ([COMPACTION, TEXT_BLOCK], "claude-fable-5", []),
}


def whole_reply(content: list[Any], model: str, transformations: list[Any]) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "input_transformations": transformations,
        "usage": {"input_tokens": 40, "output_tokens": 12},
    }


def block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    """One block as the API streams it (the SDK's accumulator reads the same deltas)."""
    kind = block["type"]
    first: dict[str, Any]
    deltas: list[dict[str, Any]]
    if kind == "thinking":
        first = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block["signature"]},
        ]
    elif kind == "text":
        first, deltas = (
            {"type": "text", "text": ""},
            [{"type": "text_delta", "text": block["text"]}],
        )
    elif kind == "compaction":
        first = {"type": "compaction", "content": None, "encrypted_content": None}
        deltas = [
            {"type": "compaction_delta", **{k: block[k] for k in ("content", "encrypted_content")}}
        ]
    else:
        first, deltas = block, []
    return [
        {"type": "content_block_start", "index": index, "content_block": first},
        *[{"type": "content_block_delta", "index": index, "delta": d} for d in deltas],
        {"type": "content_block_stop", "index": index},
    ]


def streamed_reply(content: list[Any], transformations: list[Any]) -> bytes:
    """The same reply streamed: `message_start` names the model asked for, and its (empty)
    transformations; a `fallback` block names the model that served what follows, and the
    final `message_delta` then carries that model's transformations (SDK
    `BetaRawMessageDeltaEvent`)."""
    start = whole_reply([], "claude-fable-5", []) | {
        "stop_reason": None,
        "usage": {"input_tokens": 40, "output_tokens": 1},
    }
    delta: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 12},
    }
    if transformations:
        delta["input_transformations"] = transformations
    events = [
        {"type": "message_start", "message": start},
        *[event for i, block in enumerate(content) for event in block_events(i, block)],
        delta,
        {"type": "message_stop"},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


@pytest.mark.parametrize("kind", sorted(REPLIES))
def test_a_streamed_reply_is_recorded_as_the_same_reply_unstreamed(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions, kind: str
) -> None:
    content, model, transformations = REPLIES[kind]
    fake_anthropic.enqueue(
        fake.malformed(streamed_reply(content, transformations), "text/event-stream"),
        fake.malformed(json.dumps(whole_reply(content, model, transformations)).encode()),
    )
    replies: dict[str, list[MessageAppended]] = {}
    for name, streamed in (("streamed", True), ("whole", False)):
        body = {
            "model": "claude-fable-5",
            "max_tokens": 500,
            "stream": streamed,
            "messages": [{"role": "user", "content": "Check the exploit report."}],
        }
        headers = {"x-api-key": TEST_API_KEY, "x-abridged-session": f"{kind}-{name}"}
        answer = httpx2.post(f"{proxy}/v1/messages", json=body, headers=headers)
        assert answer.status_code == 200
        replies[name] = [
            e
            for e in store.history(answer.headers["x-abridged-session"])
            if isinstance(e, MessageAppended) and e.message.to_wire()["role"] == "assistant"
        ]

    (whole,) = replies["whole"]
    assert whole.model == model  # the model that wrote what follows a hop
    assert len(replies["streamed"]) == 1, "the streamed reply was not recorded"
    (recorded_stream,) = replies["streamed"]
    assert recorded_stream.message == whole.message
    assert recorded_stream.model == whole.model
    assert recorded_stream.usage == whole.usage


def test_a_client_that_leaves_at_message_stop_has_its_reply_recorded(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    # The SDK stops reading at `message_stop` and closes the stream; the upstream's
    # connection stays open a while longer (its pings come later, then its end).
    stream = encoded("\n")
    ping = b'event: ping\ndata: {"type": "ping"}\n\n'
    pings = tuple(len(stream) + i * len(ping) for i in range(10))
    upstream = fake.malformed(stream + ping * 10, "text/event-stream; charset=utf-8")
    fake_anthropic.enqueue(attrs.evolve(upstream, splits=pings))
    question: Any = {"role": "user", "content": "Où est l'erreur ?"}
    with client.messages.stream(model=MODEL, max_tokens=50, messages=[question]) as events:
        for event in events:
            if event.type == "message_stop":
                break
    fake_anthropic.enqueue(fake.message("Next."))
    client.messages.create(
        model=MODEL,
        max_tokens=50,
        messages=[
            question,
            {"role": "assistant", "content": TEXT},
            {"role": "user", "content": "Et ensuite ?"},
        ],
    )

    (info,) = store.list_sessions().sessions  # no branch: the reply was the session's
    assert [m["role"] for m in recorded(store)] == ["user", "assistant", "user", "assistant"]
    assert not any(type(e).__name__ == "TurnWithdrawn" for e in store.history(info.id))
    assert store.stats(info.id).withdrawn_messages == 0
