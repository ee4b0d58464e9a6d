"""A reply's thinking is bound to everything before it as the model wrote it. When a block
before a thinking block is shown changed (a long text or a fetched page cut to head and tail
when the reply is recorded, a blank text block the API refuses in a request), that thinking
leaves the view, and the estimate with it; the thinking before the change stays. On models
that bind thinking (preserved thinking) the next request would be refused otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from abridged import bootstrap, render_request
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.ports import RequestOptions
from tests.support.anthropic_rules import violations
from tests.support.checks import check_request
from tests.support.thinking_binding import binding_failures, sign_reply

COUNTER = TiktokenCounter()
ADAPTIVE = RequestOptions(thinking={"type": "adaptive"})
TOOLS: list[Any] = [
    {"name": "run_command", "description": "Run it.", "input_schema": {"type": "object"}},
    {"type": "web_fetch_20250910", "name": "web_fetch"},
]
CALL = {"type": "tool_use", "id": "toolu_1", "name": "run_command", "input": {"cmd": "make"}}
PAGE = " ".join(f"word{i}" for i in range(4_000))
FETCH = [
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_fetch",
     "input": {"url": "https://example.com/spec"}},
    {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_1", "content": {
        "type": "web_fetch_result", "url": "https://example.com/spec",
        "content": {"type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": PAGE}}}},
]  # fmt: skip


def thinking(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": "unsigned"}


REPLIES = {
    "a long text cut": [
        thinking("Plan the report."),
        {"type": "text", "text": " ".join(f"line{i}" for i in range(950))},
        thinking("Now run the build."),
        CALL,
    ],
    "a fetched page cut": [thinking("Fetch it."), *FETCH, thinking("It says..."), CALL],
    "a blank text left out": [
        thinking("First."),
        {"type": "text", "text": "\n\n"},
        thinking("Second."),
        CALL,
    ],
}


@pytest.mark.parametrize("model", ["claude-fable-5-1", "claude-sonnet-5-5", "claude-opus-4-8"])
@pytest.mark.parametrize("reply", REPLIES.values(), ids=REPLIES.keys())
def test_thinking_after_a_block_shown_changed_leaves_the_view(model: str, reply: list[Any]) -> None:
    sessions = bootstrap()
    session_id = sessions.start_session(
        model=model, context_window=8_000, max_output_tokens=2_000, tools=TOOLS
    )
    sessions.append_message(session_id, {"role": "user", "content": "Build it."})
    first = sessions.prepare_request(session_id)
    body = render_request(first.context, model=model, max_tokens=2_000, options=ADAPTIVE)
    sessions.record_reply(session_id, {"role": "assistant", "content": sign_reply(body, reply)})
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "build ok"}
    sessions.append_message(session_id, {"role": "user", "content": [result]})

    prepared = sessions.prepare_request(session_id)
    check_request(prepared, COUNTER)  # valid, and the estimate is what is sent
    sent = render_request(prepared.context, model=model, max_tokens=2_000, options=ADAPTIVE)
    shown = sent["messages"][1]["content"]

    assert binding_failures(sent) == []
    assert violations(sent) == []
    # The reply still leads with its first thinking; the later one is gone.
    assert shown[0] == {**reply[0], "signature": shown[0]["signature"]}
    assert [b["type"] for b in shown].count("thinking") == 1
    assert shown[-1] == CALL
