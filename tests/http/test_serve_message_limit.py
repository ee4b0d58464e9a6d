"""`--max-message-bytes`: the proxy stores a message up to its limit, refuses a larger one
as the API refuses a body too large (413, nothing stored, nothing sent), and by default
passes the API's largest image through."""

from __future__ import annotations

import base64
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import httpx2

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.http import ServeConfig
from abridged.domain.inputs import DEFAULT_MAX_MESSAGE_BYTES
from abridged.domain.messages import ImageBlock
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.serve import served

_HEADER = struct.pack(">IIBBBBB", 1568, 1568, 8, 2, 0, 0, 0)
PNG = (
    b"\x89PNG\r\n\x1a\n"
    + struct.pack(">I", len(_HEADER))
    + b"IHDR"
    + _HEADER
    + struct.pack(">I", zlib.crc32(b"IHDR" + _HEADER))
)
IMAGE = base64.b64encode(PNG + os.urandom(5_000_000 - len(PNG))).decode()
"""A screenshot of 5 MB, the API's largest image: 6.7 MB as base64, over the library's
default limit (its pixels are noise, after a real PNG header)."""


def body() -> dict[str, Any]:
    image = {"type": "base64", "media_type": "image/png", "data": IMAGE}
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 5,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": image},
                    {"type": "text", "text": "What does this screenshot show?"},
                ],
            }
        ],
    }


def post(url: str) -> httpx2.Response:
    return httpx2.post(
        f"{url}/v1/messages",
        json=body(),
        headers={"x-api-key": TEST_API_KEY, "x-abridged-session": "shot"},
        timeout=60,
    )


def test_a_message_over_the_limit_is_refused_and_not_stored(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    db = str(tmp_path / "proxy.sqlite3")
    config = ServeConfig(
        db=db, upstream=fake_anthropic.base_url, max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES
    )
    with served(config) as url:
        answer = post(url)
    assert answer.status_code == 413
    assert answer.json()["error"]["type"] == "request_too_large"
    message = answer.json()["error"]["message"]
    assert f"{DEFAULT_MAX_MESSAGE_BYTES:,}" in message
    assert "--max-message-bytes" in message
    assert fake_anthropic.requests_to() == []
    with bootstrap(db) as sessions:
        assert sessions.list_sessions().sessions == ()


def test_the_apis_largest_image_passes_through_and_is_stored_by_default(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    db = str(tmp_path / "proxy.sqlite3")
    config = ServeConfig(db=db, upstream=fake_anthropic.base_url)
    with served(config) as url:
        answer = post(url)
    assert answer.status_code == 200, answer.text
    [sent] = fake_anthropic.requests_to()
    assert sent.body["messages"][0]["content"][0]["source"]["data"] == IMAGE
    with bootstrap(db) as sessions:
        [summary] = sessions.list_sessions().sessions
        first = sessions.session(summary.id).entries[0].message
        image = first.content[0]
        assert isinstance(image, ImageBlock)
        assert image.data == IMAGE
