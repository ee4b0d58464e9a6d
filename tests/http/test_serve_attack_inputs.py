"""A hostile client's bodies and headers: each is refused in the Messages API's error shape
with a 4xx, before anything is stored or sent upstream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from abridged.adapters.http import ServeConfig
from abridged.application.service import Sessions
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.raw_http import RawAnswer, raw_request
from tests.support.serve import served

MODEL = "claude-sonnet-4-6"
KEY = TEST_API_KEY.encode()


def body(**fields: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "max_tokens": 20,
        "messages": [{"role": "user", "content": "Hi"}],
        **fields,
    }


def encoded(value: dict[str, Any]) -> bytes:
    # `ensure_ascii` writes a lone surrogate as the escape `\ud800`, as a hostile client would.
    return json.dumps(value).encode()


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.fixture
def small_proxy(fake_anthropic: FakeAnthropic, store: Sessions) -> Iterator[str]:
    config = ServeConfig(db=":memory:", upstream=fake_anthropic.base_url, max_body_bytes=200_000)
    with served(config, store) as url:
        yield url


def assert_refused(answer: RawAnswer, store: Sessions, fake_anthropic: FakeAnthropic) -> None:
    assert 400 <= answer.status < 500, (answer.status, answer.body[:300])
    error = answer.json()
    assert error["type"] == "error", error
    assert error["error"]["type"] in {"invalid_request_error", "request_too_large"}, error
    assert store.list_sessions().sessions == ()
    assert fake_anthropic.requests == []  # neither path


BODIES = {
    "nested past the parser's recursion": (
        b'{"model":"m","max_tokens":5,"messages":' + nested(50_000) + b"}"
    ),
    "nested deep in a field the proxy forwards": encoded(body(metadata={"x": 0}))[:-3]
    + nested(900)
    + b"}}",
    "nested deep in the system prompt": encoded(body())[:-1] + b',"system":' + nested(900) + b"}",
    "nested deep in a message": encoded(body())[:-1]
    + b',"messages":[{"role":"user","content":[{"type":"text","text":"x","extra":'
    + nested(900)
    + b"}]}]}",
    "a lone surrogate in a message": encoded(
        body(messages=[{"role": "user", "content": "a\ud800"}])
    ),
    "a lone surrogate in the session's name": encoded(body(metadata={"user_id": "\udc00"})),
    "a lone surrogate in a forwarded field": encoded(
        body(temperature=1, stop_sequences=["\ud800"])
    ),
    "a lone surrogate in a key": encoded(body(**{"\ud800": 1})),
    "a surrogate encoded as UTF-8 bytes": encoded(body())[:-1] + b',"x":"\xed\xa0\x80"}',
    "NaN": encoded(body())[:-1] + b',"temperature":NaN}',
    "Infinity in a tool input": encoded(body())[:-1] + b',"top_p":-Infinity}',
    # Valid JSON that Python reads as infinity, and would write back as `Infinity`.
    "a number too large for a float": encoded(body())[:-1] + b',"temperature":1e999}',
    "a negative one in a forwarded object": encoded(body())[:-1]
    + b',"metadata":{"user_id":"u","n":-1E+400}}',
    "UTF-16": json.dumps(body()).encode("utf-16"),
}


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/messages/count_tokens"])
@pytest.mark.parametrize("name", list(BODIES))
def test_a_body_that_cannot_be_read_or_sent_on_is_refused(
    small_proxy: str, store: Sessions, fake_anthropic: FakeAnthropic, name: str, path: str
) -> None:
    headers = [(b"x-api-key", KEY), (b"content-type", b"application/json")]
    answer = raw_request(small_proxy, "POST", path, headers, BODIES[name])
    assert_refused(answer, store, fake_anthropic)


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/messages/count_tokens"])
@pytest.mark.parametrize(
    "header",
    [
        (b"x-api-key", KEY + b"\xe9"),
        (b"anthropic-beta", "prompt-caching-\u00e9".encode("latin-1")),
    ],
)
def test_a_header_that_cannot_be_sent_on_is_refused_without_echoing_it(
    small_proxy: str,
    store: Sessions,
    fake_anthropic: FakeAnthropic,
    header: tuple[bytes, bytes],
    path: str,
) -> None:
    headers = [(b"content-type", b"application/json"), header]
    if header[0] != b"x-api-key":
        headers.append((b"x-api-key", KEY))
    answer = raw_request(small_proxy, "POST", path, headers, encoded(body()))
    assert_refused(answer, store, fake_anthropic)
    assert header[0].decode() in answer.json()["error"]["message"]
    assert TEST_API_KEY not in answer.body.decode("latin-1")


@pytest.mark.parametrize(
    ("tools", "said"),
    [
        (-1, "tools: Input should be a valid list"),
        ({"name": "Bash"}, "tools: Input should be a valid list"),
        ([{"name": "Bash", "input_schema": {"type": "object"}}, 7], "tools.1: Input should be"),
    ],
)
def test_tools_not_a_list_of_objects_are_refused_before_anything_is_stored(
    small_proxy: str, store: Sessions, fake_anthropic: FakeAnthropic, tools: Any, said: str
) -> None:
    headers = [(b"x-api-key", KEY), (b"content-type", b"application/json")]
    answer = raw_request(small_proxy, "POST", "/v1/messages", headers, encoded(body(tools=tools)))
    assert_refused(answer, store, fake_anthropic)
    assert said in answer.json()["error"]["message"]
