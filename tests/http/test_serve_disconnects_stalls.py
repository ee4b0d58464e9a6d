"""Clients that stall: half a body sent and then nothing (or a process that dies mid-upload),
a streamed reply the client stops reading. None of them holds a request, or an upstream
connection, longer than `--client-timeout`; none leaves anything stored or a failure
logged."""

from __future__ import annotations

import json
import logging
import math
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest

from abridged.adapters.http import ServeConfig
from abridged.application.service import Sessions
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.serve import served

MODEL = "claude-sonnet-4-6"
CLIENT_TIMEOUT = 0.5
SECONDS = 10.0
"""How long a test waits for what must happen (far longer than it takes)."""
TOKEN = "token-of-tenant-a-0123"
HEADERS = {
    "x-api-key": TEST_API_KEY,
    "anthropic-version": "2023-06-01",
    "x-abridged-token": TOKEN,
    "authorization": f"Bearer {TOKEN}",
    "content-type": "application/json",
}
QUESTION = {"role": "user", "content": "Why does the export drop the last row?"}
BODY = {"model": MODEL, "max_tokens": 200, "messages": [QUESTION]}


@pytest.fixture
def proxy(fake_anthropic: FakeAnthropic, store: Sessions) -> Iterator[str]:
    config = ServeConfig(
        db=":memory:",
        upstream=fake_anthropic.base_url,
        client_timeout=CLIENT_TIMEOUT,
        tokens={TOKEN: "a"},
    )
    with served(config, store) as url:
        yield url


def connected(url: str, *, receive_buffer: int | None = None) -> socket.socket:
    split = urlsplit(url)
    sock = socket.socket()
    if receive_buffer is not None:  # set before connecting: it sets the window offered
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(SECONDS)
    sock.connect((split.hostname, split.port))
    return sock


def request_head(path: str, length: int) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "host: test", f"content-length: {length}"]
    lines += [f"{name}: {value}" for name, value in HEADERS.items()]
    return "\r\n".join(lines).encode() + b"\r\n\r\n"


def read_to_the_end(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while chunk := sock.recv(1 << 20):
        received += chunk
    return received


def wait_for_metric(url: str, line: str) -> None:
    """Until the proxy's `/metrics` shows `line` (what it does for a client that left
    cannot be seen from the client's side)."""
    deadline = time.monotonic() + SECONDS
    while line not in httpx2.get(f"{url}/metrics").text:
        assert time.monotonic() < deadline, f"no {line} in /metrics"
        time.sleep(0.01)


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/sessions"])
def test_half_a_body_and_then_nothing_is_answered_408_and_the_connection_closed(
    proxy: str, store: Sessions, path: str
) -> None:
    raw = json.dumps(BODY if path == "/v1/messages" else {"model": MODEL}).encode()
    with connected(proxy) as sock:
        sock.sendall(request_head(path, len(raw)) + raw[: len(raw) // 2])
        answer = read_to_the_end(sock)  # the server closes it: recv does not wait for ever

    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), head
    assert b"connection: close" in head.lower()
    message = json.dumps(json.loads(payload))
    assert f"did not arrive within {CLIENT_TIMEOUT:g} s" in message
    assert not store.list_sessions().sessions


def test_a_client_that_dies_mid_upload_leaves_nothing_and_no_failure_logged(
    proxy: str, store: Sessions, caplog: pytest.LogCaptureFixture
) -> None:
    raw = json.dumps(BODY).encode()
    with caplog.at_level(logging.WARNING), connected(proxy) as sock:
        sock.sendall(request_head("/v1/messages", len(raw)) + raw[: len(raw) // 2])
    wait_for_metric(proxy, 'abridged_serve_abandoned{stage="body"} 1')

    assert not store.list_sessions().sessions
    assert [record.getMessage() for record in caplog.records] == []
    assert "abridged_serve_refused" not in httpx2.get(f"{proxy}/metrics").text


def socket_buffers_megabytes() -> int:
    """The most the kernel's socket buffers between the upstream and the client may hold:
    two send buffers and a receive buffer at their largest (Linux grows them on loopback)."""
    try:
        send = int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
        receive = int(Path("/proc/sys/net/ipv4/tcp_rmem").read_text().split()[2])
    except (OSError, IndexError, ValueError):
        return 64
    return math.ceil((2 * send + receive) / (1 << 20))


def huge_stream(megabytes: int) -> bytes:
    """A streamed reply of `megabytes` one-megabyte text deltas."""
    piece = "x" * (1 << 20)
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_huge",
                    "type": "message",
                    "role": "assistant",
                    "model": MODEL,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        ),
    ]
    delta = {"type": "text_delta", "text": piece}
    events += [
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
    ] * megabytes
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 1},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def test_a_client_that_stops_reading_a_stream_is_cut_off_and_the_upstream_closed(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    # More than the sockets between them hold: the upstream cannot send it all unread.
    reply = huge_stream(socket_buffers_megabytes() + 8)
    fake_anthropic.enqueue(fake.malformed(reply, "text/event-stream"))
    raw = json.dumps(BODY | {"stream": True}).encode()
    with connected(proxy, receive_buffer=4096) as sock:
        sock.sendall(request_head("/v1/messages", len(raw)) + raw)
        assert sock.recv(64).startswith(b"HTTP/1.1 200")
        # The client reads nothing more. The proxy reads the upstream only as fast as the
        # client takes the stream (it does not buffer the reply), and gives up on the client
        # after --client-timeout: the upstream's connection closes before all was sent.
        assert fake_anthropic.abandoned.acquire(timeout=SECONDS)
        received = read_to_the_end(sock)  # what was on its way, then the end

    assert b"event: message_stop" not in received
    (info,) = store.list_sessions().sessions
    assert store.stats(info.id).requests == 0  # no reply recorded
