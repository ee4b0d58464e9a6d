"""Limits every route keeps, and bodies a browser or a careless client sends: the sessions
API honours --max-body-bytes, and the proxy reads JSON only, as it was sent."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator

import httpx2
import pytest

from abridged.adapters.http import ServeConfig
from abridged.application.service import Sessions
from tests.http.conftest import TOKENS
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.raw_http import raw_request
from tests.support.serve import served

TOKEN_A = next(iter(TOKENS))
LIMIT = 4_096
BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 5,
    "messages": [{"role": "user", "content": "Hi"}],
}


@pytest.fixture
def limited(fake_anthropic: FakeAnthropic, store: Sessions) -> Iterator[str]:
    config = ServeConfig(
        db=":memory:", upstream=fake_anthropic.base_url, tokens=TOKENS, max_body_bytes=LIMIT
    )
    with served(config, store) as url:
        yield url


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("token", [TOKEN_A, None])
def test_the_sessions_api_refuses_a_body_over_the_limit(
    limited: str, store: Sessions, chunked: bool, token: str | None
) -> None:
    # Before reading it, and before the token: the limit protects the worker's memory.
    body = json.dumps({"model": "m", "max_output_tokens": 5, "system": "x" * 2 * LIMIT})
    headers = [(b"content-type", b"application/json")]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    answer = raw_request(limited, "POST", "/v1/sessions", headers, body.encode(), chunked=chunked)
    assert answer.status == 413
    assert answer.header("content-type") == "application/json"
    assert isinstance(answer.json()["detail"], str)  # the sessions API's errors' shape
    assert store.list_sessions().sessions == ()


@pytest.mark.parametrize(
    ("content_type", "encoding"),
    [
        # What a web page can send to a loopback proxy without asking (no CORS preflight).
        (b"text/plain", None),
        (b"application/x-www-form-urlencoded", None),
        (None, None),
        # A body the proxy would not decompress, and would forward with the wrong header.
        (b"application/json", b"gzip"),
    ],
)
def test_the_proxy_reads_json_bodies_only(
    limited: str,
    store: Sessions,
    fake_anthropic: FakeAnthropic,
    content_type: bytes | None,
    encoding: bytes | None,
) -> None:
    content = json.dumps(BODY).encode()
    headers = [(b"x-api-key", TEST_API_KEY.encode()), (b"x-abridged-token", TOKEN_A.encode())]
    if content_type:
        headers.append((b"content-type", content_type))
    if encoding:
        headers.append((b"content-encoding", encoding))
    for path in ("/v1/messages", "/v1/messages/count_tokens"):
        answer = raw_request(limited, "POST", path, headers, content)
        assert answer.status in (400, 415), answer.body
        assert answer.json()["type"] == "error"
    assert store.list_sessions().sessions == ()
    assert fake_anthropic.requests == []


def test_a_gzip_bomb_is_refused_without_being_inflated(
    limited: str, store: Sessions, fake_anthropic: FakeAnthropic
) -> None:
    bomb = gzip.compress(b'{"model": "m", "messages": "' + b"a" * 50_000_000 + b'"}')
    assert len(bomb) < LIMIT * 20
    answer = httpx2.post(
        f"{limited}/v1/messages",
        content=bomb,
        headers={
            "x-api-key": TEST_API_KEY,
            "x-abridged-token": TOKEN_A,
            "content-type": "application/json",
            "content-encoding": "gzip",
        },
    )
    assert answer.status_code in (400, 413, 415)
    assert answer.json()["type"] == "error"
    assert store.list_sessions().sessions == ()
    assert fake_anthropic.requests == []
