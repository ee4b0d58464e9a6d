"""Blocks of today's replies that earlier checks did not know: the advisor tool's
`advisor_tool_result` (answering a `server_tool_use` named `advisor`), the `fallback` block a
server-side fallback puts where one model's output gives way to the next, and the
`mcp_tool_listing` an MCP toolset returns. Each is recorded as the API sent it, sent back
byte for byte while its message is in view, and kept with what it belongs to through
pruning, compaction and degradation at a small window (docs/content.md#block-types).

Sources: agents-and-tools/tool-use/advisor-tool; build-with-claude/refusals-and-fallback;
the SDK's `BetaAdvisorToolResultBlockParam`, `BetaFallbackBlockParam` and
`BetaMCPToolListingBlockParam` (anthropic 2.14), whose docstrings give the rules.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest
from anthropic.types.beta import BetaMessage

from abridged.adapters.anthropic.calls import reply_from_message
from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.service import Sessions
from abridged.domain.errors import InvalidMessageError, InvalidToolDefinitionError
from abridged.domain.messages import Message
from tests.support.anthropic_rules import violations
from tests.support.builders import TOOLS, words
from tests.support.checks import check_request
from tests.support.counting import MemoCounter

COUNTER = MemoCounter(TiktokenCounter())
ADVISOR = {"type": "advisor_20260301", "name": "advisor", "model": "claude-opus-4-6"}
MCP_TOOLSET = {"type": "mcp_toolset", "mcp_server_name": "docs"}


def real_app() -> Sessions:
    return Sessions(
        counter=COUNTER,
        summarizer=ExtractiveSummarizer(COUNTER),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )


def start(app: Sessions, model: str, tools: list[Any], window: int = 8_000) -> UUID:
    return app.start_session(
        model=model,
        context_window=window,
        max_output_tokens=1_000,
        system="You are a careful coding agent.",
        tools=tools,
    )


def bare(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def sent_blocks(body: dict[str, Any]) -> list[tuple[int, list[dict[str, Any]]]]:
    return [
        (i, [bare(b) for b in m["content"]])
        for i, m in enumerate(body["messages"])
        if isinstance(m["content"], list)
    ]


def canonical(block: dict[str, Any]) -> str:
    return json.dumps(block, ensure_ascii=False, separators=(",", ":"))


def loop(
    app: Sessions, session_id: UUID, turns: int, reply: Any, output_words: int = 700
) -> list[dict[str, Any]]:
    """`turns` turns of a prompt, a reply `reply(t)` ending in a client call, its result
    (`output_words` long) and a closing reply; every request is checked and returned."""
    bodies = []
    for t in range(turns):
        app.append_message(session_id, Message.user(f"Task {t}: fix module {t}. " + words(250)))
        bodies.append(check_request(app.prepare_request(session_id), COUNTER))
        call = {"type": "tool_use", "id": f"toolu_{t}", "name": "read_file", "input": {}}
        app.record_reply(session_id, {"role": "assistant", "content": [*reply(t), call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{t}", "content": words(700)}
        app.append_message(session_id, {"role": "user", "content": [result]})
        bodies.append(check_request(app.prepare_request(session_id), COUNTER))
        closing = {"type": "text", "text": f"Module {t} fixed. " + words(80)}
        app.record_reply(session_id, {"role": "assistant", "content": [closing]})
    app.append_message(session_id, Message.user("Thanks."))
    bodies.append(check_request(app.prepare_request(session_id), COUNTER))
    return bodies


def advised(t: int) -> list[dict[str, Any]]:
    """A consultation as the advisor tool returns it: a `server_tool_use` named `advisor`
    with an empty input, then its result in the same reply; plain advice, advice the API
    keeps encrypted, or an error, by turn."""
    call_id = f"srvtoolu_adv{t}"
    content: dict[str, Any]
    if t % 3 == 0:
        content = {"type": "advisor_result", "text": "Plan: " + words(600, f"step{t}")}
    elif t % 3 == 1:
        content = {"type": "advisor_redacted_result", "encrypted_content": f"RW5jcnlwdGVk{t}" * 40}
    else:
        content = {"type": "advisor_tool_result_error", "error_code": "max_uses_exceeded"}
    return [
        {"type": "text", "text": "Let me consult the advisor."},
        {"type": "server_tool_use", "id": call_id, "name": "advisor", "input": {}},
        {"type": "advisor_tool_result", "tool_use_id": call_id, "content": content},
    ]


def test_advisor_consultations_stay_paired_and_encrypted_advice_is_sent_unchanged() -> None:
    # An `advisor_tool_result` was not known as a server tool's result: its call looked
    # unanswered, so the session took the reply for a paused turn and refused the client
    # tool's result after it.
    app = real_app()
    session_id = start(app, "claude-sonnet-4-6", [*TOOLS, ADVISOR])
    bodies = loop(app, session_id, 8, advised)

    assert app.session(session_id).generation > 0  # the window forced compactions
    stored = {canonical(b) for t in range(8) for b in advised(t)}
    for body in bodies:
        for i, blocks in sent_blocks(body):
            calls = [b["id"] for b in blocks if b["type"] == "server_tool_use"]
            for j, block in enumerate(blocks):
                if block["type"] != "advisor_tool_result":
                    continue
                assert block["tool_use_id"] in calls, (i, j)  # never without its call
                if block["content"]["type"] != "advisor_result":
                    assert canonical(block) in stored  # encrypted advice is never cut
            results = {b["tool_use_id"] for b in blocks if b["type"] == "advisor_tool_result"}
            assert set(calls) <= results  # and a call never without its result
    # The last reply went out as it came.
    last = bodies[-1]["messages"]
    assert [bare(b) for b in last[-2]["content"]] == [
        {"type": "text", "text": "Module 7 fixed. " + words(80)}
    ]


def test_a_reply_with_an_advisor_result_is_followed_by_the_next_prompt_or_tool_results() -> None:
    # Taken for a call left to run, the consultation made the session refuse the prompt
    # after the reply (UnansweredToolUseError: "the paused reply has not run").
    app = real_app()
    session_id = start(app, "claude-sonnet-4-6", [*TOOLS, ADVISOR], window=50_000)
    app.append_message(session_id, Message.user("Refactor the parser."))
    answered = {"role": "assistant", "content": [*advised(1), {"type": "text", "text": "Done."}]}
    app.record_reply(session_id, answered)
    app.append_message(session_id, Message.user("Now the lexer."))
    call = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}
    calling = {"role": "assistant", "content": [*advised(2), call]}
    app.record_reply(session_id, calling)
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "def lex(): ..."}
    # Nothing of the reply waits to run: content may follow the client tool's result.
    app.append_message(
        session_id, {"role": "user", "content": [result, {"type": "text", "text": "Go on."}]}
    )
    body = check_request(app.prepare_request(session_id), COUNTER)
    sent = [[bare(b) for b in m["content"]] for m in body["messages"]]
    assert sent[1] == answered["content"]
    assert sent[3] == calling["content"]


def fallback(to: str = "claude-opus-4-8") -> dict[str, Any]:
    return {
        "type": "fallback",
        "from": {"model": "claude-fable-5"},
        "to": {"model": to},
        "trigger": {"type": "refusal", "category": "cyber"},
    }


def thinking(name: str, size: int = 40) -> dict[str, Any]:
    return {"type": "thinking", "thinking": words(size, name), "signature": f"sig-{name}"}


def hopped(t: int) -> list[dict[str, Any]]:
    """A reply a refusal handed to a fallback model: the first model's thinking, the
    `fallback` block, the fallback model's thinking (runs flanking the boundary)."""
    return [
        thinking(f"first{t}"),
        fallback(),
        thinking(f"second{t}"),
        {"type": "text", "text": "On it."},
    ]


def test_a_fallback_hop_between_thinking_runs_is_recorded_and_kept_in_place() -> None:
    # The block between two thinking runs read as thinking out of place: the reply was
    # refused at record. "When you send the assistant turn back, keep this block in its
    # original position ... omitting the block merges them into one span the server cannot
    # validate" (BetaFallbackBlockParam).
    app = real_app()
    session_id = start(app, "claude-opus-4-8", list(TOOLS))
    bodies = loop(app, session_id, 8, hopped)

    assert app.session(session_id).generation > 0
    for body in bodies:
        for i, blocks in sent_blocks(body):
            kinds = [b["type"] for b in blocks]
            if "fallback" not in kinds and not any(k == "thinking" for k in kinds):
                continue
            order = [b for b in blocks if b["type"] in ("thinking", "fallback")]
            t = next((k for k in range(8) if any(b == thinking(f"first{k}") for b in order)), None)
            if t is None or "fallback" not in kinds:
                # A turn whose thinking was left out: the boundary stays or goes with it.
                assert not any(b["type"] == "thinking" for b in order), i
                continue
            # Sent as stored: the thinking and the boundary in their order, byte for byte.
            assert order == [thinking(f"first{t}"), fallback(), thinking(f"second{t}")], i


def test_a_fallback_block_is_only_taken_in_an_assistant_message(app: Sessions) -> None:
    session_id = start(app, "claude-opus-4-8", list(TOOLS), window=50_000)
    with pytest.raises(InvalidMessageError):
        app.append_message(
            session_id, {"role": "user", "content": [fallback(), {"type": "text", "text": "hi"}]}
        )
    app.append_message(session_id, Message.user("Hello."))
    with pytest.raises(InvalidMessageError):
        app.record_reply(
            session_id,
            {
                "role": "assistant",
                "content": [{"type": "fallback", "to": {}}, {"type": "text", "text": "Hi."}],
            },
        )


def listed(t: int) -> list[dict[str, Any]]:
    """A reply that used an MCP toolset: the listing the API fetched, the call and its
    result."""
    call_id = f"mcptoolu_{t}"
    listing = {
        "type": "mcp_tool_listing",
        "mcp_server_name": "docs",
        "tools": [
            {
                "name": "lookup",
                "description": "Look a page up. " + words(30, "doc"),
                "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
            }
        ],
    }
    return [
        listing,
        {
            "type": "mcp_tool_use",
            "id": call_id,
            "name": "lookup",
            "server_name": "docs",
            "input": {"q": "parser"},
        },
        {
            "type": "mcp_tool_result",
            "tool_use_id": call_id,
            "is_error": False,
            "content": [{"type": "text", "text": words(500, f"page{t}")}],
        },
    ]


def test_an_mcp_tool_listing_is_sent_back_with_its_reply_never_marked() -> None:
    # "Send the assistant message back unchanged, this block included"
    # (BetaMCPToolListingBlock); the block takes no `cache_control` (its param has none).
    app = real_app()
    session_id = start(app, "claude-opus-4-8", [*TOOLS, MCP_TOOLSET])
    bodies = loop(app, session_id, 8, listed)

    assert app.session(session_id).generation > 0
    listings = {canonical(listed(t)[0]) for t in range(8)}
    for body in bodies:
        for message in body["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block["type"] == "mcp_tool_listing":
                    assert canonical(block) in listings  # byte for byte, unmarked


def test_the_checker_knows_the_new_blocks_and_their_rules() -> None:
    def body(*content: dict[str, Any]) -> dict[str, Any]:
        return {
            "model": "claude-opus-4-8",
            "max_tokens": 100,
            "tools": [*TOOLS, ADVISOR, MCP_TOOLSET],
            "messages": [
                {"role": "user", "content": "Go."},
                {"role": "assistant", "content": list(content)},
                {"role": "user", "content": "Next."},
            ],
        }

    text = {"type": "text", "text": "Done."}
    assert violations(body(*advised(0), text)) == []
    assert violations(body(*hopped(0))) == []
    assert violations(body(*listed(0), text)) == []
    orphan = advised(0)[2]
    assert {v.rule for v in violations(body(orphan, text))} == {"server-tool-result-orphan"}
    marked = {**fallback(), "cache_control": {"type": "ephemeral"}}
    assert "cache-control-invalid" in {v.rule for v in violations(body(marked, text))}
    assert {v.rule for v in violations(body({"type": "fallback"}, text))} == {"block-invalid"}
    merged = [thinking("a"), thinking("b"), text]
    assert violations(body(*merged)) == []
    moved = [thinking("a"), text, fallback(), thinking("b"), text]
    assert violations(body(*moved)) == []


def test_a_reply_read_from_the_sdk_keeps_the_new_blocks_as_the_api_sent_them() -> None:
    # The SDK names the fallback block's `from` field `from_`; its API form is what goes back.
    content = [thinking("first"), fallback(), thinking("second"), *advised(1), *listed(1)]
    content.append({"type": "text", "text": "Done."})
    sdk = BetaMessage.model_validate(
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-8",
            "content": content,
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }
    )
    reply = reply_from_message(sdk).message
    assert [b.to_wire() for b in reply.content] == content
    app = real_app()
    session_id = start(app, "claude-opus-4-8", [*TOOLS, ADVISOR, MCP_TOOLSET], window=50_000)
    app.append_message(session_id, Message.user("Go."))
    app.record_reply(session_id, reply)
    app.append_message(session_id, Message.user("Next."))
    body = check_request(app.prepare_request(session_id), COUNTER)
    assert [bare(b) for b in body["messages"][1]["content"]] == content


def test_an_mcp_toolset_is_taken_by_its_server_name_and_changed_by_rewriting_tools() -> None:
    # An `mcp_toolset` has no `name` (the SDK's BetaMCPToolsetParam): a session refused it
    # at start, so an MCP conversation could not be kept at all.
    app = real_app()
    with pytest.raises(InvalidToolDefinitionError):
        start(app, "claude-opus-4-8", [*TOOLS, MCP_TOOLSET, dict(MCP_TOOLSET)])
    session_id = start(app, "claude-opus-5", list(TOOLS), window=50_000)
    app.append_message(session_id, Message.user("Look the parser up."))
    app.record_reply(
        session_id, {"role": "assistant", "content": [{"type": "text", "text": "Ok."}]}
    )
    wiki = {"type": "mcp_toolset", "mcp_server_name": "wiki"}
    # A tool change message cannot add a toolset (it has no name to give): tools are rewritten.
    app.reconfigure(session_id, tools=[*TOOLS, MCP_TOOLSET, wiki])
    app.append_message(session_id, Message.user("And now?"))
    body = check_request(app.prepare_request(session_id), COUNTER)
    assert body["tools"][-2:] == [MCP_TOOLSET, wiki]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
