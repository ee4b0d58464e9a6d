"""One HTTP/1.1 request written byte for byte on a socket, for what an HTTP client refuses
to send (non-ASCII header values, a header twice, trailing white space)."""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit

import attrs


@attrs.frozen
class RawAnswer:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def json(self) -> Any:
        return json.loads(self.body)


def raw_request(
    url: str,
    method: str,
    path: str,
    headers: list[tuple[bytes, bytes]],
    body: bytes = b"",
    *,
    chunked: bool = False,
) -> RawAnswer:
    """Sends the request as written (`chunked`: in 1 KB chunks) and reads the answer to the
    end (the connection is closed after it)."""
    split = urlsplit(url)
    lines = [f"{method} {path} HTTP/1.1".encode(), b"host: test", b"connection: close"]
    lines += [name + b": " + value for name, value in headers]
    if chunked:
        lines.append(b"transfer-encoding: chunked")
        pieces = [body[i : i + 1024] for i in range(0, len(body), 1024)]
        payload = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    else:
        lines.append(b"content-length: %d" % len(body))
        payload = body
    with socket.create_connection((split.hostname or "127.0.0.1", split.port or 80)) as sock:
        sock.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + payload)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, rest = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = tuple(
        (name.strip(), value.strip())
        for name, _, value in (line.partition(":") for line in header_lines)
    )
    if any(k.lower() == "transfer-encoding" and v == "chunked" for k, v in parsed):
        rest = _unchunked(rest)
    return RawAnswer(int(status_line.split()[1]), parsed, rest)


def _unchunked(data: bytes) -> bytes:
    body = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        body, data = body + data[:size], data[size + 2 :]
    return body
