"""The proxy reads an upstream's whole (not streamed) answer only as far as an answer of
its kind can go: a gateway's endless or enormous page is never held whole."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
import httpx2
import pytest

from abridged.adapters.http.clients import ERROR_BYTES, whole_answer

CHUNK = 64 * 1024


class Connected:
    """A client that stays connected (what `unless_gone` asks of a request)."""

    async def is_disconnected(self) -> bool:
        return False

    async def receive(self) -> dict[str, str]:
        await anyio.sleep_forever()
        raise AssertionError


class Endless(httpx2.AsyncByteStream):
    """A body that never ends; counts what was read of it."""

    def __init__(self) -> None:
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            self.sent += CHUNK
            yield b"x" * CHUNK


def read(status: int, stream: httpx2.AsyncByteStream, reply_bytes: int) -> bytes | int:
    answer = httpx2.Response(status, stream=stream)

    async def main() -> bytes | int:
        got = await whole_answer(Connected(), answer, reply_bytes)  # type: ignore[arg-type]
        return got if isinstance(got, bytes) else got.status_code

    return anyio.run(main)


@pytest.mark.parametrize("status", [500, 502, 529, 429, 400])
def test_an_endless_error_page_is_read_up_to_the_error_limit(status: int) -> None:
    body = Endless()
    got = read(status, body, reply_bytes=32_000_000)

    assert got == b""  # read as no answer: the client gets the status in the API's shape
    assert body.sent <= ERROR_BYTES + CHUNK


def test_a_reply_larger_than_a_request_is_a_502_and_not_read_on() -> None:
    body = Endless()
    got = read(200, body, reply_bytes=4 * CHUNK)

    assert got == 502
    assert body.sent <= 5 * CHUNK


def test_an_answer_within_its_limit_is_read_whole() -> None:
    error = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "x"}})
    reply = json.dumps({"type": "message", "content": [{"type": "text", "text": "y" * 5000}]})

    assert read(529, httpx2.ByteStream(error.encode()), reply_bytes=10) == error.encode()
    assert read(200, httpx2.ByteStream(reply.encode()), reply_bytes=len(reply)) == reply.encode()
