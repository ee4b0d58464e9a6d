"""What an upstream (or a gateway in front of it) answers that is not the API's shape: the
client still gets the API's error shape, with the upstream's status, request-id and
retry-after, and nothing half is recorded."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import pytest

from abridged.application.service import Sessions
from abridged.domain.events import MessageAppended
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic

BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 5,
    "messages": [{"role": "user", "content": "Hi"}],
}


def recorded_roles(store: Sessions) -> list[str]:
    (info,) = store.list_sessions().sessions
    return [
        e.message.to_wire()["role"]
        for e in store.history(info.id)
        if isinstance(e, MessageAppended)
    ]


@pytest.mark.parametrize(
    ("answer", "status", "kind"),
    [
        (fake.html_error(502), 502, "api_error"),
        (fake.malformed(b"<html>busy</html>", "text/html", 529), 529, "overloaded_error"),
        (fake.malformed(b"slow down", "text/plain", 429), 429, "rate_limit_error"),
        (fake.malformed(b"", "application/json", 500), 500, "api_error"),
        (fake.plain_text(), 502, "api_error"),
        (fake.truncated_json(), 502, "api_error"),
        (fake.empty_body(), 502, "api_error"),
        (fake.malformed(b'{"type": "error"}', "application/json", 200), 502, "api_error"),
        (fake.malformed(b"<html>" + b"busy " * 400_000, "text/html", 529), 529, "overloaded_error"),
    ],
    ids=[
        "html 502",
        "html 529",
        "text 429",
        "empty 500",
        "text 200",
        "cut 200",
        "empty 200",
        "not a message",
        "2 MB html 529",
    ],
)
def test_an_answer_not_in_the_apis_shape_reaches_the_client_in_it(
    proxy: str,
    fake_anthropic: FakeAnthropic,
    store: Sessions,
    answer: fake.Response,
    status: int,
    kind: str,
) -> None:
    fake_anthropic.enqueue(answer)
    got = httpx2.post(f"{proxy}/v1/messages", json=BODY, headers={"x-api-key": TEST_API_KEY})
    assert got.status_code == status
    assert got.headers["content-type"] == "application/json"
    error = got.json()
    assert error["type"] == "error"
    assert error["error"]["type"] == kind
    assert got.headers["request-id"].startswith("req_fake")  # the upstream's, to report
    assert error["request_id"] == got.headers["request-id"]
    assert recorded_roles(store) == ["user"]


def test_an_api_error_passes_unchanged_with_its_retry_after(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    fake_anthropic.enqueue(fake.rate_limited(retry_after="7"))
    with pytest.raises(anthropic.RateLimitError) as raised:
        client.messages.create(**BODY)  # type: ignore[call-overload]
    assert raised.value.response.headers["retry-after"] == "7"
    assert raised.value.request_id is not None
    assert raised.value.request_id.startswith("req_fake")
    assert recorded_roles(store) == ["user"]


def test_a_count_that_is_not_the_apis_shape_reaches_the_client_in_it(
    proxy: str, fake_anthropic: FakeAnthropic
) -> None:
    body = {"model": BODY["model"], "messages": BODY["messages"]}
    for answer, status in [(fake.html_error(503), 503), (fake.plain_text(), 502)]:
        fake_anthropic.enqueue(answer, path=fake.COUNT_TOKENS_PATH)
        got = httpx2.post(
            f"{proxy}/v1/messages/count_tokens", json=body, headers={"x-api-key": TEST_API_KEY}
        )
        assert got.status_code == status
        assert got.json()["error"]["type"] == "api_error"
    assert (
        httpx2.post(
            f"{proxy}/v1/messages/count_tokens", json=body, headers={"x-api-key": TEST_API_KEY}
        ).json()["input_tokens"]
        > 0
    )


def test_the_proxys_own_errors_carry_a_request_id_as_the_apis_do(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(fake.slow(fake.message(), 3.0))  # the proxy waits 2 s
    with pytest.raises(anthropic.APIStatusError) as raised:
        client.messages.create(**BODY)  # type: ignore[call-overload]
    assert raised.value.status_code == 504
    assert raised.value.request_id is not None
    assert raised.value.request_id == raised.value.body["request_id"]  # type: ignore[index]


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_an_upstream_redirect_never_sends_the_client_elsewhere(
    secured: str, fake_anthropic: FakeAnthropic, store: Sessions, status: int
) -> None:
    elsewhere = FakeAnthropic().start()
    try:
        fake_anthropic.enqueue(
            fake.Response(
                status,
                {},
                raw=b"",
                content_type="text/html",
                headers={"location": f"{elsewhere.base_url}/v1/messages"},
            )
        )
        elsewhere.enqueue(fake.message("answered elsewhere"))
        headers = {"x-abridged-session": "redirected", "x-abridged-token": "token-of-tenant-a-0123"}
        with (
            anthropic.Anthropic(
                api_key=TEST_API_KEY, base_url=secured, max_retries=0, default_headers=headers
            ) as sdk,
            pytest.raises(anthropic.InternalServerError) as raised,
        ):
            sdk.messages.create(**BODY)  # type: ignore[call-overload]
        assert raised.value.status_code == 502
        assert "location" not in raised.value.response.headers
        assert raised.value.body["error"]["type"] == "api_error"  # type: ignore[index]
        assert elsewhere.requests_to() == []  # neither the body nor the token went there
    finally:
        elsewhere.stop()
    assert recorded_roles(store) == ["user"]


@pytest.mark.parametrize("status", [201, 203, 206])
def test_a_2xx_other_than_200_is_no_reply(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions, status: int
) -> None:
    reply = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "odd"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    fake_anthropic.enqueue(fake.Response(status, reply))
    got = httpx2.post(f"{proxy}/v1/messages", json=BODY, headers={"x-api-key": TEST_API_KEY})
    assert got.status_code == 502
    assert got.json()["error"]["type"] == "api_error"
    assert recorded_roles(store) == ["user"]  # the reply is not recorded


SSE_EVENTS: list[dict[str, Any]] = [
    {"type": "message_start", "message": {"id": "msg_1", "type": "message",
        "role": "assistant", "model": "claude-sonnet-4-6", "content": [],
        "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 2}},
    {"type": "message_stop"},
]  # fmt: skip
SSE_REPLY = b"".join(
    f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in SSE_EVENTS
)


@pytest.mark.parametrize("asked", ["stream", "message"])
def test_a_reply_streamed_or_not_against_the_clients_ask_is_no_reply(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions, asked: str
) -> None:
    if asked == "stream":  # a stream asked for, a message answered
        fake_anthropic.enqueue(fake.malformed(json.dumps(fake.message().body).encode()))
    else:
        fake_anthropic.enqueue(fake.malformed(SSE_REPLY, "text/event-stream; charset=utf-8"))

    def ask() -> object:
        if asked == "stream":
            with client.messages.stream(**BODY) as events:  # type: ignore[arg-type]
                return events.get_final_message()
        return client.messages.create(**BODY)  # type: ignore[call-overload]

    with pytest.raises(anthropic.InternalServerError) as raised:
        ask()
    assert raised.value.status_code == 502
    assert raised.value.body["error"]["type"] == "api_error"  # type: ignore[index]
    assert recorded_roles(store) == ["user"]  # nothing recorded as delivered
