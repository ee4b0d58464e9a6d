"""Histories that differ by a byte the model is bound to (a thinking block's signature, the
white space inside a tool input), and two clients racing on one name with different
histories: each becomes a branch of its own, never a mix."""

from __future__ import annotations

import threading
from typing import Any

import httpx2

from abridged.application.service import Sessions
from abridged.domain.events import MessageAppended
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic

HEADERS = {"x-api-key": TEST_API_KEY, "x-abridged-session": "bound"}
TOOLS = [{"name": "run", "input_schema": {"type": "object"}}]
THINKING = {"type": "thinking", "thinking": "List it.", "signature": "c2lnbmVkLTE="}
CALL = {"type": "tool_use", "id": "toolu_1", "name": "run", "input": {"cmd": "ls  -la"}}
RESULT_TURN = {
    "role": "user",
    "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}],
}


def send(proxy: str, messages: list[Any]) -> httpx2.Response:
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 2000,
        "messages": messages,
        "tools": TOOLS,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    return httpx2.post(f"{proxy}/v1/messages", json=body, headers=HEADERS)


def histories(store: Sessions) -> dict[Any, list[Any]]:
    return {
        str(info.id): [
            e.message.to_wire() for e in store.history(info.id) if isinstance(e, MessageAppended)
        ]
        for info in store.list_sessions().sessions
    }


def test_a_changed_signature_or_tool_input_is_a_branch_of_its_own(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    fake_anthropic.enqueue(fake.message([THINKING, CALL], stop_reason="tool_use"))
    prompt = {"role": "user", "content": "What is here?"}
    assert send(proxy, [prompt]).status_code == 200
    variants = [
        [THINKING, CALL],  # as recorded: carries on in the session itself
        [{**THINKING, "signature": "c2lnbmVkLTI="}, CALL],
        [THINKING, {**CALL, "input": {"cmd": "ls -la"}}],
    ]
    sessions = []
    for blocks in variants:
        answer = send(proxy, [prompt, {"role": "assistant", "content": blocks}, RESULT_TURN])
        assert answer.status_code == 200
        sessions.append(answer.headers["x-abridged-session"])

    assert len(set(sessions)) == 3
    stored = histories(store)
    for session_id, blocks in zip(sessions, variants, strict=True):
        kept = next(m for m in stored[session_id] if m["role"] == "assistant")
        assert kept["content"] == blocks  # each branch holds exactly what its client sent
    assert fake_anthropic.violations == []


def test_two_clients_racing_on_one_name_never_mix(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    fake_anthropic.enqueue(*[fake.slow(fake.message(f"Answer {n}."), 0.2) for n in range(6)])
    statuses: list[int] = []

    def client(number: int) -> None:
        prompt = {"role": "user", "content": f"Client {number} asks."}
        answer = httpx2.post(
            f"{proxy}/v1/messages",
            json={"model": "claude-sonnet-4-6", "max_tokens": 50, "messages": [prompt]},
            headers=HEADERS,
        )
        statuses.append(answer.status_code)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert statuses == [200] * 6
    stored = histories(store)
    assert len(stored) == 6  # the name's session and five branches
    for messages in stored.values():
        assert [m["role"] for m in messages] == ["user", "assistant"]
    asked = sorted(m[0]["content"][0]["text"] for m in stored.values())
    assert asked == [f"Client {n} asks." for n in range(6)]
