"""A client that changes its top-level `system` or `tools` mid-conversation, through
`abridged serve`: Claude Code sends new tools whenever an MCP server connects, and a host
naming its session may send a new system prompt.

The client owns its top level and sends it with every request: the proxy forwards it as
sent and records it as the session's (`reconfigure(..., top_level=True)`), even on a model
that takes `role: "system"` messages and tool changes, where a host's `reconfigure` would
add a system message instead. Such a message the client never holds would go upstream
beside the client's own change, and make the client's next request diverge from the
session. The fake API refuses any request that breaks a rule, a thinking block sent under
another prefix included.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from abridged.adapters.http import ServeConfig
from abridged.adapters.http.branches import BRANCH_KEY
from abridged.application.service import Sessions
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.serve import served

READ = {"name": "read", "description": "Reads a file.", "input_schema": {"type": "object"}}
LOOKED_UP = "Looks a page up in the docs server."
LOOKUP = {
    "name": "mcp__docs__lookup",
    "description": LOOKED_UP,
    "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
}
OLD_SYSTEM = "You are a terse coding agent."
NEW_SYSTEM = "You are a careful coding agent. Cite the file and line of every claim."
BEFORE = {"system": OLD_SYSTEM, "tools": [READ]}
AFTER = {
    "tools": {"system": OLD_SYSTEM, "tools": [READ, LOOKUP]},
    "system": {"system": NEW_SYSTEM, "tools": [READ]},
}
NEW_TEXT = {"tools": LOOKED_UP, "system": NEW_SYSTEM}
HEADERS = {"x-api-key": fake.TEST_API_KEY, "x-abridged-session": "mcp-day"}


def post(url: str, model: str, top: dict[str, Any], history: list[Any]) -> dict[str, Any]:
    body = {
        "model": model,
        "max_tokens": 2_000,
        "thinking": {"type": "adaptive"},
        **top,
        "messages": history,
    }
    answer = httpx2.post(f"{url}/v1/messages", headers=HEADERS, json=body)
    assert answer.status_code == 200, answer.text
    content: dict[str, Any] = answer.json()
    return content


def think(words: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": words, "signature": "unsigned"}


@pytest.mark.parametrize("model", ["claude-opus-4-8", "claude-opus-5-5"])
@pytest.mark.parametrize("what", ["tools", "system"])
def test_a_new_top_level_goes_up_once_as_sent_and_the_client_stays_in_its_session(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions, what: str, model: str
) -> None:
    # Both models take system messages and tool changes; Opus 5.5 binds each thinking block
    # to its prefix, top level included. The change comes inside a tool loop, as an MCP
    # server that connects while the model works.
    after = AFTER[what]
    fake_anthropic.enqueue(
        fake.message(
            [
                think("Read it first."),
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}},
            ],
            stop_reason="tool_use",
        ),
        fake.message([think("It reads well."), {"type": "text", "text": "The file is fine."}]),
    )
    history: list[Any] = [{"role": "user", "content": "Is src/app.py fine?"}]
    history.append({"role": "assistant", "content": post(proxy, model, BEFORE, history)["content"]})
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "print('hi')"}
    history.append({"role": "user", "content": [result]})
    history.append({"role": "assistant", "content": post(proxy, model, after, history)["content"]})
    changed = fake_anthropic.requests_to()[-1]
    # The same request again (a client that lost the answer) is the one answered already.
    post(proxy, model, after, history[:-1])
    history.append({"role": "user", "content": "And src/cli.py?"})
    post(proxy, model, after, history)

    # Upstream: the client's top level as it sent it, the change said once; no system
    # message of the proxy's own, so no tool change needing betas the client did not send.
    assert {key: changed.body[key] for key in after} == after
    assert json.dumps(changed.body).count(NEW_TEXT[what]) == 1
    assert [m["role"] for m in changed.body["messages"]] == ["user", "assistant", "user"]
    assert "anthropic-beta" not in changed.headers
    # One session, no branch: the client's next requests hold what the session holds.
    (info,) = store.list_sessions().sessions
    assert BRANCH_KEY not in info.metadata
    recorded = [type(e).__name__ for e in store.history(info.id)]
    assert not {"SystemPromptInstructed", "ToolsInstructed"} & set(recorded)
    # The session budgets the top level actually sent.
    session = store.session(info.id)
    assert (session.system, session.tools) == (after["system"], after["tools"])
    if model == "claude-opus-5-5":
        # The loop's thinking was produced under the old top level: the API would refuse
        # it now; it leaves the view with the change, and what came after stays valid.
        assert "ReasoningDowngraded" in recorded
        assert "Read it first." not in json.dumps(changed.body)
        assert "It reads well." in json.dumps(fake_anthropic.requests_to()[-1].body)
    assert fake_anthropic.violations == []


def test_a_compacted_session_shows_only_the_new_system_prompt(
    fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    # The summary and the facts ledger are written from the messages, never from the
    # system prompt: after the change, nothing sent upstream holds the old one.
    config = ServeConfig(db=":memory:", upstream=fake_anthropic.base_url, context_window=6_000)
    model = "claude-opus-4-8"
    history: list[Any] = []
    with served(config, store) as url:
        for turn in range(12):
            if turn == 10:
                (info,) = store.list_sessions().sessions
                assert store.compactions(info.id)  # before the change
            top = BEFORE if turn < 10 else AFTER["system"]
            history.append({"role": "user", "content": f"Task {turn}: " + "inspect it " * 80})
            reply = post(url, model, top, history)
            history.append({"role": "assistant", "content": reply["content"]})

    (info,) = store.list_sessions().sessions  # no branch
    last = fake_anthropic.requests_to()[-1].body
    assert last["system"] == NEW_SYSTEM
    assert OLD_SYSTEM not in json.dumps(last)
    assert store.session(info.id).system == NEW_SYSTEM
    assert fake_anthropic.violations == []
