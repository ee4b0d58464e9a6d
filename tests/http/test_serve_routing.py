"""Routing a client's whole-history requests to sessions: whatever a client sends (carrying
on, editing an earlier prompt, rewinding, sending the same request again), the session a
request goes to holds exactly that history, and no session ever holds two."""

from __future__ import annotations

import itertools
import json
from typing import Any
from uuid import uuid4

import attrs
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.http import proxy as proxy_module
from abridged.adapters.http.config import ServeConfig
from abridged.adapters.http.errors import ApiError
from abridged.adapters.http.history import Route
from abridged.adapters.http.locks import RequestLocks
from abridged.adapters.http.metrics import ServeMetrics
from abridged.adapters.http.proxy import MessagesProxy
from abridged.application.service import Sessions
from abridged.domain.events import MessageAppended
from tests.support import fake_anthropic as fake

# (which earlier request's history to start from, how many of its turns to keep, a reply?)
STEPS = st.lists(
    st.tuples(st.integers(0, 20), st.integers(0, 6), st.booleans()), min_size=1, max_size=12
)


USER = {"role": "user", "content": "Why do the tests fail?"}


def stored(proxy: MessagesProxy, session_id: Any) -> list[Any]:
    return [
        e.message.to_wire()
        for e in proxy.sessions.history(session_id)
        if isinstance(e, MessageAppended)
    ]


def wire(history: list[dict[str, str]]) -> list[Any]:
    return [
        {"role": m["role"], "content": [{"type": "text", "text": m["content"]}]} for m in history
    ]


@settings(max_examples=20, deadline=None)
@given(STEPS)
def test_each_request_reaches_a_session_holding_exactly_its_history(
    steps: list[tuple[int, int, bool]],
) -> None:
    sessions = bootstrap()
    upstream = httpx2.AsyncClient()  # never used: requests are routed, not sent
    proxy = MessagesProxy(
        sessions, ServeConfig(db=":memory:"), upstream, RequestLocks({}), ServeMetrics()
    )
    sent: list[list[dict[str, str]]] = [[]]
    try:
        for number, (start, keep, replied) in enumerate(steps):
            base = sent[start % len(sent)]
            # Keep whole turns of an earlier history (a rewind or an edit), then a new prompt.
            history = [
                *base[: 2 * min(keep, len(base) // 2)],
                {"role": "user", "content": f"prompt {number}"},
            ]
            if number % 5 == 4:
                history = list(sent[-1]) if sent[-1] and sent[-1][-1]["role"] == "user" else history
            body = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": history}
            ready = proxy._prepare("default", "routing", body)
            assert stored(proxy, ready.session_id)[: len(history)] == wire(history)
            if replied:
                reply = {
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"reply {number}"}],
                }
                proxy._record(ready, reply)
                messages = stored(proxy, ready.session_id)
                if len(messages) == len(history) + 1:
                    assert messages[-1] == reply
                    history = [*history, {"role": "assistant", "content": f"reply {number}"}]
            sent.append(history)
        for info in sessions.list_sessions(limit=500).sessions:
            roles = [m["role"] for m in stored(proxy, info.id)]
            assert all(a != b for a, b in itertools.pairwise(roles))  # never mixed
            texts = [m["content"][0]["text"] for m in stored(proxy, info.id)]
            assert len(texts) == len(set(texts))  # nothing appended twice
    finally:
        sessions.close()


def test_a_session_that_keeps_moving_is_a_529_the_sdks_retry(monkeypatch: Any) -> None:
    """Every try finds the session moved on by another writer: after the last, the client
    gets 529 `overloaded_error` (retried by the SDKs), as docs/serving.md says, not a 400."""
    sessions = bootstrap()
    proxy = MessagesProxy(
        sessions, ServeConfig(db=":memory:"), httpx2.AsyncClient(), RequestLocks({}), ServeMetrics()
    )
    moved = Route(session_id=uuid4(), start=0, exists=True, parent=None, stored=0)
    monkeypatch.setattr(proxy_module, "route", lambda *_: attrs.evolve(moved, session_id=uuid4()))
    body = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": wire([USER])}
    try:
        with pytest.raises(ApiError) as refused:
            proxy._prepare("default", "moving", body)
    finally:
        sessions.close()
    assert (refused.value.status, refused.value.kind) == (529, "overloaded_error")


def test_a_client_that_sorts_the_keys_of_tool_inputs_stays_in_one_session(
    proxy: str, fake_anthropic: fake.FakeAnthropic, store: Sessions
) -> None:
    # A Go or Rust client decodes a tool call's input into a map and writes it back with
    # its keys sorted: the same call, not an edit of the history.
    tools = [{"name": "lookup", "description": "Looks up.", "input_schema": {"type": "object"}}]
    history: list[Any] = [{"role": "user", "content": "Find the row."}]
    named = {
        "x-api-key": fake.TEST_API_KEY,
        "x-abridged-session": "sorted",
        "content-type": "application/json",
    }
    for turn in range(4):
        call = {"query": f"q{turn}", "filters": {"table": "rows", "last": True}, "limit": 5}
        fake_anthropic.enqueue(
            fake.message(
                [{"type": "tool_use", "id": f"toolu_{turn:02d}", "name": "lookup", "input": call}],
                stop_reason="tool_use",
            )
        )
        body = {"model": "claude-sonnet-4-6", "max_tokens": 64, "tools": tools, "messages": history}
        answer = httpx2.post(
            f"{proxy}/v1/messages", content=json.dumps(body, sort_keys=True), headers=named
        )
        assert answer.status_code == 200, answer.text
        result = {"type": "tool_result", "tool_use_id": f"toolu_{turn:02d}", "content": "ok"}
        history += [
            {"role": "assistant", "content": answer.json()["content"]},
            {"role": "user", "content": [result]},
        ]

    (info,) = store.list_sessions().sessions  # no branch
    assert info.metadata["abridged:name"] == "sorted"
    sent = fake_anthropic.requests_to()[-1].body["messages"]
    assert list(sent[1]["content"][0]["input"]) == ["query", "filters", "limit"]  # as stored
    assert list(sent[1]["content"][0]["input"]["filters"]) == ["table", "last"]


# A tool call's input as the model wrote it, and as a JavaScript client (JSON.parse, then
# JSON.stringify) or a Go one (float64) writes it back: the same doubles, spelled otherwise.
RESPELLED = [
    ({"factor": 1.0, "scale": [2.50e1, -0.0]}, '{"factor":1,"scale":[25,0]}'),
    ({"id": 12345678901234567891}, '{"id":12345678901234567000}'),
    ({"tiny": 1e-7, "big": 1e21}, '{"tiny":1e-7,"big":1e+21}'),
]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize(("recorded", "sent_back"), RESPELLED, ids=["fraction", "2^53", "exp"])
def test_a_client_that_respells_the_numbers_of_a_reply_stays_in_one_session(
    proxy: str,
    fake_anthropic: fake.FakeAnthropic,
    store: Sessions,
    stream: bool,
    recorded: dict[str, Any],
    sent_back: str,
) -> None:
    # The digests compared the numbers' JSON spellings: the reply sent back diverged from
    # the recorded one, and the client's next request went to a branch holding its whole
    # history.
    tools = [{"name": "scale", "input_schema": {"type": "object"}}]
    call = {"type": "tool_use", "id": "toolu_01", "name": "scale", "input": recorded}
    fake_anthropic.enqueue(fake.message([call], stop_reason="tool_use"))
    question = {"role": "user", "content": "Scale it."}
    named = {"x-api-key": fake.TEST_API_KEY, "x-abridged-session": "numbers"}
    body = {"model": "claude-sonnet-4-6", "max_tokens": 64, "tools": tools, "stream": stream}
    first = httpx2.post(
        f"{proxy}/v1/messages", json={**body, "messages": [question]}, headers=named
    )
    assert first.status_code == 200, first.text

    reply = {"role": "assistant", "content": [{**call, "input": json.loads(sent_back)}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01"}]}
    later = {**body, "stream": False, "messages": [question, reply, result]}
    second = httpx2.post(f"{proxy}/v1/messages", json=later, headers=named)

    assert second.status_code == 200, second.text
    (info,) = store.list_sessions().sessions  # no branch
    kept = [e.message.to_wire() for e in store.history(info.id) if isinstance(e, MessageAppended)]
    assert json.dumps(kept[1]["content"][0]["input"]) == json.dumps(recorded)  # byte for byte
    forwarded = fake_anthropic.requests_to()[-1].body["messages"][1]["content"][0]["input"]
    assert json.dumps(forwarded) == json.dumps(recorded)  # as stored, spelled as recorded
