"""Reading a streamed Messages reply while passing its bytes on unchanged."""

from __future__ import annotations

import json
import re
from typing import Any

BROKEN_OFF = (
    b"event: error\n"
    b'data: {"type": "error", "error": {"type": "api_error", '
    b'"message": "abridged: the upstream stream broke off before message_stop"}}\n\n'
)
"""What the proxy adds to a stream that ended without saying how: the SDKs raise on an
`error` event, where a stream that merely stops would be taken as a whole, shorter reply."""


BLANK_LINE = re.compile(rb"(?:\r\n|\n|\r(?!\n))(?:\r\n|\n|\r)")
"""A line's end and an empty line's: where an event ends. Server-sent events end a line
with CRLF, LF or CR (a CRLF is one line end, never a CR's and an LF's)."""


def complete_events(data: bytes | bytearray, start: int = 0) -> int:
    """How many bytes of `data` are whole events (up to the last blank line), 0 when none
    ends after `start` (where an earlier call found none): the proxy passes events on
    whole, so that an `error` event it adds never follows half of one. Lines may end with
    CR alone: such a stream was held whole until it ended. A CR that ends `data` may be
    the first half of a CRLF; the events end there all the same (the LF, passed on next,
    ends no line of its own after a CR)."""
    end = 0
    for found in BLANK_LINE.finditer(data, start):
        end = found.end()
    return end


class ReplyAccumulator:
    """Builds the reply message from the server-sent events of `POST /v1/messages` with
    `stream: true`. `message` is the whole reply once `message_stop` arrived, else `None`
    (a stream cut short, an `error` event, an event it cannot read)."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._searched = 0
        self._after_cr = False
        self._message: dict[str, Any] | None = None
        self._partial: dict[int, str] = {}
        self._pieces: dict[tuple[int, str], list[str]] = {}
        self._done = False
        self._broken = False
        self._errored = False
        self._stopped = False

    @property
    def message(self) -> dict[str, Any] | None:
        if not self._done or self._broken:
            return None
        for index, key in list(self._pieces):  # a block the stream never said stopped
            self._join(index, key)
        return self._message

    @property
    def ended(self) -> bool:
        """Whether the stream said how it ended: `message_stop`, or an `error` event."""
        return self._done or self._stopped or self._errored

    def feed(self, chunk: bytes) -> None:
        """Reads the complete events in `chunk` (with what earlier chunks left over). Once
        the reply cannot be built, the events are still read for how the stream ends."""
        # Each byte is searched once and copied once, however the events fall into chunks:
        # a long reply is tens of thousands of events, a single event may span many chunks.
        self._buffer += self._line_feeds(chunk)
        start = 0
        while (end := self._buffer.find(b"\n\n", max(start, self._searched))) >= 0:
            raw, start = bytes(self._buffer[start:end]), end + 2
            self._read(raw)
        del self._buffer[:start]
        self._searched = max(len(self._buffer) - 1, 0)

    def _read(self, raw: bytes) -> None:
        """One event, its lines without their ends."""
        lines = raw.split(b"\n")
        name = next((line[6:].strip() for line in lines if line.startswith(b"event:")), b"")
        self._stopped = self._stopped or name == b"message_stop"
        self._errored = self._errored or name == b"error"
        data = b"\n".join(line[5:].lstrip(b" ") for line in lines if line.startswith(b"data:"))
        if self._broken or not data:
            return
        try:
            self._event(json.loads(data))
        except (ValueError, KeyError, TypeError, IndexError):
            self._broken = True

    def _line_feeds(self, chunk: bytes) -> bytes:
        """`chunk` with its line ends as `\n` (SSE ends a line with CRLF, LF or CR). The
        network may cut a CRLF in two, and read apart, the CR and the LF would make a blank
        line that ends no event: an LF that starts a chunk after a CR is that CR's. (A CR
        that ends a chunk counts at once: held for the next chunk, the last of a stream
        whose lines end with CR alone was never read, nor its reply recorded.)"""
        if not chunk:
            return chunk
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._after_cr = chunk.endswith(b"\r")
        return chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

    def _event(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "message_start":
            self._message = dict(event["message"])
            self._message["content"] = []
        elif kind == "content_block_start":
            block = dict(event["content_block"])
            if block.get("type") in {"tool_use", "server_tool_use", "mcp_tool_use"}:
                self._partial[event["index"]] = ""
            self._content().append(block)
            served_by = block.get("to") if block.get("type") == "fallback" else None
            if isinstance(served_by, dict) and isinstance(served_by.get("model"), str):
                # `message_start` names the model asked for; the whole reply names the one
                # that served it, which wrote what follows the hop.
                self._whole()["model"] = served_by["model"]
        elif kind == "content_block_delta":
            self._delta(event["index"], event["delta"])
        elif kind == "content_block_stop":
            index = event["index"]
            for key in ("text", "thinking", "partial_json"):
                self._join(index, key)
            if index in self._partial:
                # As the SDKs build it: the input `content_block_start` carried, replaced by
                # the deltas' JSON when any came (a gateway may send a call's input whole).
                text = self._partial.pop(index)
                block = self._content()[index]
                if text:
                    block["input"] = json.loads(text)
                elif block.get("input") is None:
                    block["input"] = {}
        elif kind == "message_delta":
            message = self._whole()
            message.update(event.get("delta") or {})
            for key in ("input_transformations", "context_management"):
                # Sent here only when they replace `message_start`'s (a mid-stream fallback).
                if event.get(key) is not None:
                    message[key] = event[key]
            usage = dict(message.get("usage") or {})
            usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
            message["usage"] = usage
        elif kind == "message_stop":
            self._done = True
        elif kind == "error":
            self._broken = self._errored = True
        # "ping" and event types added later carry nothing the reply is made of.

    def _delta(self, index: int, delta: dict[str, Any]) -> None:
        block = self._content()[index]
        kind = delta["type"]
        if kind == "text_delta":
            self._add(index, "text", block.get("text", ""), delta["text"])
        elif kind == "input_json_delta":
            self._add(index, "partial_json", self._partial.get(index, ""), delta["partial_json"])
        elif kind == "thinking_delta":
            self._add(index, "thinking", block.get("thinking", ""), delta["thinking"])
        elif kind == "signature_delta":
            block["signature"] = delta["signature"]
        elif kind == "citations_delta":
            citations = block.get("citations")
            if not isinstance(citations, list):
                citations = block["citations"] = []
            citations.append(delta["citation"])
        elif kind == "compaction_delta":
            block["content"] = delta["content"]
            block["encrypted_content"] = delta.get("encrypted_content")
        else:
            # A delta this version cannot apply: the reply is passed on, not recorded.
            self._broken = True

    def _add(self, index: int, key: str, before: str, piece: str) -> None:
        """Adds a delta's `piece` to the block's `key`: kept in a list and joined once, when
        the block stops (a text joined at each delta was copied whole each time: a reply of
        100,000 deltas took seconds of the event loop)."""
        if not isinstance(piece, str):
            raise TypeError("a delta's text is not a string")
        pieces = self._pieces.get((index, key))
        if pieces is None:
            if not isinstance(before, str):
                raise TypeError("a block's text is not a string")
            pieces = self._pieces[index, key] = [before]
        pieces.append(piece)

    def _join(self, index: int, key: str) -> None:
        pieces = self._pieces.pop((index, key), None)
        if pieces is None:
            return
        if key == "partial_json":
            self._partial[index] = "".join(pieces)
        else:
            self._content()[index][key] = "".join(pieces)

    def _whole(self) -> dict[str, Any]:
        if self._message is None:
            raise KeyError("an event before message_start")
        return self._message

    def _content(self) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = self._whole()["content"]
        return content
