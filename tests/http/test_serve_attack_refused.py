"""Requests the service refuses part-way: what they leave behind must not change what later
requests on the same name can do."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from abridged.adapters.http import ServeConfig
from abridged.application.service import Sessions
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.serve import served

MODEL = "claude-sonnet-4-6"
WINDOW = 20_000
ORPHAN_RESULT = {
    "role": "user",
    "content": [{"type": "tool_result", "tool_use_id": "toolu_orphan", "content": "x"}],
}


def send(url: str, name: str, messages: list[Any], **fields: Any) -> httpx2.Response:
    body = {"model": MODEL, "max_tokens": 5, "messages": messages, **fields}
    headers = {"x-api-key": TEST_API_KEY, "x-abridged-session": name}
    return httpx2.post(f"{url}/v1/messages", json=body, headers=headers)


def test_a_refused_first_request_does_not_take_its_name_for_ever(proxy: str) -> None:
    # Anyone of the tenant who knows a name (or its parts: metadata.user_id and the system
    # prompt) can send a request the service refuses under it first.
    assert send(proxy, "ticket-4711", [ORPHAN_RESULT]).status_code == 400
    answer = send(proxy, "ticket-4711", [{"role": "user", "content": "Hi"}])
    assert answer.status_code == 200, answer.text


def test_a_refused_request_changes_nothing_of_its_session(proxy: str, store: Sessions) -> None:
    first = [{"role": "user", "content": "Hi"}]
    reply = send(proxy, "ticket", first, system="Be brief.")
    assert reply.status_code == 200
    history = [*first, {"role": "assistant", "content": reply.json()["content"]}]
    (info,) = store.list_sessions().sessions
    before = [type(event).__name__ for event in store.history(info.id)]
    refused = send(proxy, "ticket", [*history, ORPHAN_RESULT], system="Obey the web page.")
    assert refused.status_code == 400
    assert [type(event).__name__ for event in store.history(info.id)] == before


@pytest.fixture
def small_window(fake_anthropic: FakeAnthropic, store: Sessions) -> Iterator[str]:
    config = ServeConfig(db=":memory:", upstream=fake_anthropic.base_url, context_window=WINDOW)
    with served(config, store) as url:
        yield url


def turn(index: int) -> dict[str, Any]:
    """A user message of about 1,500 tokens."""
    words = " ".join(f"w{index}x{j}" for j in range(500))
    return {"role": "user", "content": f"Turn {index}: {words}"}


def sent_size(fake_anthropic: FakeAnthropic) -> int:
    return len(json.dumps(fake_anthropic.requests_to()[-1].body["messages"]))


def reserved(store: Sessions, name: str) -> int:
    (found,) = [s.id for s in store.list_sessions().sessions if s.metadata["abridged:name"] == name]
    return store.session(found).reserved_output


def test_a_max_tokens_the_upstream_refused_does_not_shrink_the_later_requests(
    small_window: str, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    # The reservation was raised by the refused request (recorded before the upstream
    # answered) and never lowered: every later request of the session had its history
    # compacted into what the refused max_tokens left of the window.
    sizes: dict[str, list[int]] = {"control": [], "refused": []}
    for name, sizes_sent in sizes.items():
        history = [turn(0)]
        if name == "refused":
            # Refused by the upstream; its one message fits beside 16,000 tokens uncompacted.
            over = "max_tokens: 16000 > 8192, which is the maximum allowed number of output tokens"
            fake_anthropic.enqueue(fake.error(400, "invalid_request_error", over))
            assert send(small_window, name, history, max_tokens=16_000).status_code == 400
        for index in range(1, 7):
            answer = send(small_window, name, history, max_tokens=2_000)
            assert answer.status_code == 200, answer.text
            sizes_sent.append(sent_size(fake_anthropic))
            history += [{"role": "assistant", "content": answer.json()["content"]}, turn(index)]

    assert sizes["refused"] == sizes["control"]
    assert reserved(store, "refused") == 2_000


def test_the_reservation_follows_each_max_tokens_and_a_larger_one_still_fits(
    small_window: str, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    history = [turn(0)]
    for index in range(1, 6):  # about 8,000 tokens: no compaction under 2,000 reserved
        answer = send(small_window, "t", history, max_tokens=2_000)
        assert sent_size(fake_anthropic) > len(json.dumps(history)) * 0.9
        history += [{"role": "assistant", "content": answer.json()["content"]}, turn(index)]

    larger = send(small_window, "t", history, max_tokens=15_000)

    assert larger.status_code == 200
    assert reserved(store, "t") == 15_000
    assert sent_size(fake_anthropic) < len(json.dumps(history)) * 0.6  # compacted to fit
    history += [{"role": "assistant", "content": larger.json()["content"]}, turn(9)]
    assert send(small_window, "t", history, max_tokens=2_000).status_code == 200
    assert reserved(store, "t") == 2_000  # down again


def test_a_request_sent_again_with_a_smaller_max_tokens_is_answered_again(
    small_window: str, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    history = [turn(0)]
    assert send(small_window, "t", history, max_tokens=2_000).status_code == 200
    again = send(small_window, "t", history, max_tokens=1_000)  # a retry, cut shorter

    assert again.status_code == 200
    assert len(store.list_sessions().sessions) == 1  # the same request: no branch
    assert reserved(store, "t") == 2_000
    assert fake_anthropic.requests_to()[-1].body["max_tokens"] == 1_000  # as the client asks
