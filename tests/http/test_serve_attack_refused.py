"""Requests the service refuses part-way: what they leave behind must not change what later
requests on the same name can do."""

from __future__ import annotations

from typing import Any

import httpx2

from abridged.application.service import Sessions
from tests.support.fake_anthropic import TEST_API_KEY

MODEL = "claude-sonnet-4-6"
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
