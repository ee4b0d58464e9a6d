"""The open content model, held over generated conversations.

Conversations carry every block type the Messages API knows (documents, search results,
server tool calls and their results, the advisor's among them, citations, container uploads,
tool references inside tool results, fallback hops between thinking runs, MCP tool listings)
and types no version knows yet, at sizes from a word to far more than the
window. Every request is valid and in budget, no request is ever refused (a reply is, at
record, with nothing written, only when what no view can reduce outgrows the budget), and the
blocks of unknown types come back byte for byte.
"""

from __future__ import annotations

import base64
import itertools
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.service import Sessions
from abridged.domain.errors import ContextTooSmallError
from abridged.domain.messages import (
    Block,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireBlock,
)
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.properties.strategies import TOOL_NAMES, TOOLS, text
from tests.support.checks import check_request
from tests.support.counting import MemoCounter

COUNTER = MemoCounter(TiktokenCounter())
HUGE_MESSAGE_BYTES = 64_000_000
FUTURE_TYPES = ("hologram", "tool_sandbox_snapshot")
"""Block types standing in for ones the API adds after this library."""

PROPERTY = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def wire(block: dict[str, Any]) -> WireBlock:
    return WireBlock.of(block)


def sized_text(draw: st.DrawFn) -> str:
    size = draw(st.sampled_from(["small", "small", "small", "large", "huge"]))
    line = draw(text)
    if size == "small":
        return line
    # Sized in characters, not lines: a large text is a few thousand tokens and a huge one
    # is past the largest window drawn (20,000 tokens) whatever its line, without a long
    # line making it megabytes that add nothing but time.
    chars = 8_000 if size == "large" else draw(st.integers(160_000, 480_000))
    repeat = max(1, chars // (len(line) + 6))
    return "\n".join(f"{i}: {line}" for i in range(repeat))


def future_block(draw: st.DrawFn) -> WireBlock:
    return wire(
        {
            "type": draw(st.sampled_from(FUTURE_TYPES)),
            "payload": {"x": draw(st.integers()), "note": draw(text)},
            "z_first_then_a": [1, 2.5, None, True],
        }
    )


def document(draw: st.DrawFn) -> WireBlock:
    if draw(st.booleans()):
        return wire(
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": sized_text(draw)},
                "title": "notes.txt",
                "citations": {"enabled": True},
            }
        )
    pages = draw(st.sampled_from([1, 40, 4_000]))
    data = base64.b64encode(b"%PDF-1.4 " + b"x" * (pages * 100)).decode()
    return wire(
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": data},
        }
    )


def search_result(draw: st.DrawFn) -> WireBlock:
    return wire(
        {
            "type": "search_result",
            "source": "https://example.com/a",
            "title": draw(text),
            "content": [{"type": "text", "text": draw(text)}],
        }
    )


def prompt(draw: st.DrawFn) -> Message:
    blocks: list[Block] = [TextBlock(sized_text(draw))]
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["document", "search", "upload", "future", "image"]))
        if kind == "document":
            blocks.append(document(draw))
        elif kind == "search":
            blocks.append(search_result(draw))
        elif kind == "upload":
            blocks.append(wire({"type": "container_upload", "file_id": "file_011abc"}))
        elif kind == "future":
            blocks.append(future_block(draw))
        else:
            blocks.append(ImageBlock("base64", media_type="image/png", data="iVBORw0KGgo="))
    return Message(Role.USER, tuple(blocks))


FALLBACK = wire(
    {
        "type": "fallback",
        "from": {"model": "claude-fable-5"},
        "to": {"model": "claude-opus-4-8"},
        "trigger": {"type": "refusal", "category": None},
    }
)
MCP_LISTING = wire(
    {
        "type": "mcp_tool_listing",
        "mcp_server_name": "docs",
        "tools": [{"name": "lookup", "input_schema": {"type": "object"}}],
    }
)

SERVER_TOOLS = (
    "web_search",
    "web_fetch",
    "code_execution",
    "bash_code_execution",
    "text_editor_code_execution",
    "tool_search_tool",
    "mcp",
    "advisor",
)


def server_pair(draw: st.DrawFn, ids: itertools.count[int]) -> list[Block]:
    use_id = f"srvtoolu_{next(ids):05d}"
    kind = draw(st.sampled_from(SERVER_TOOLS))
    if kind == "mcp":
        use = wire(
            {
                "type": "mcp_tool_use",
                "id": use_id,
                "name": "lookup",
                "server_name": "docs",
                "input": {"q": draw(text)},
            }
        )
        result = wire(
            {
                "type": "mcp_tool_result",
                "tool_use_id": use_id,
                "is_error": False,
                "content": [{"type": "text", "text": draw(text)}],
            }
        )
        return [use, result]
    if kind == "advisor":
        # agents-and-tools/tool-use/advisor-tool: an empty input; advice in plain text, or
        # encrypted (sent back verbatim).
        advice: dict[str, Any] = (
            {"type": "advisor_result", "text": sized_text(draw)}
            if draw(st.booleans())
            else {"type": "advisor_redacted_result", "encrypted_content": "RW5jcnlwdGVk"}
        )
        call = {"type": "server_tool_use", "id": use_id, "name": "advisor", "input": {}}
        answer = {"type": "advisor_tool_result", "tool_use_id": use_id, "content": advice}
        return [wire(call), wire(answer)]
    use = wire(
        {"type": "server_tool_use", "id": use_id, "name": kind, "input": {"query": draw(text)}}
    )
    if kind not in ("web_search", "web_fetch"):
        output = {
            "type": f"{kind}_result",
            "stdout": sized_text(draw),
            "stderr": "",
            "return_code": 0,
        }
        name = "tool_search_tool_result" if kind == "tool_search_tool" else f"{kind}_tool_result"
        return [use, wire({"type": name, "tool_use_id": use_id, "content": output})]
    if kind == "web_search":
        content: Any = [
            {
                "type": "web_search_result",
                "url": "https://example.com",
                "title": draw(text),
                "encrypted_content": "RW5jcnlwdGVk",
                "page_age": None,
            }
        ]
    else:
        content = {
            "type": "web_fetch_result",
            "url": "https://example.com/page",
            "content": {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": draw(text)},
            },
        }
    result = wire({"type": f"{kind}_tool_result", "tool_use_id": use_id, "content": content})
    cited = TextBlock(
        draw(text),
        citations=(
            {
                "type": "web_search_result_location",
                "url": "https://example.com",
                "title": "t",
                "encrypted_index": "RW5j",
                "cited_text": "a quote",
            },
        ),
    )
    return [use, result, cited]


def tool_output(draw: st.DrawFn) -> str | tuple[TextBlock | ImageBlock | WireBlock, ...]:
    if draw(st.booleans()):
        return sized_text(draw)
    nested: list[TextBlock | ImageBlock | WireBlock] = [TextBlock(sized_text(draw))]
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["reference", "search", "document", "future"]))
        if kind == "reference":
            nested.append(wire({"type": "tool_reference", "tool_name": "read_file"}))
        elif kind == "search":
            nested.append(search_result(draw))
        elif kind == "document":
            nested.append(document(draw))
        else:
            nested.append(future_block(draw))
    return tuple(nested)


@st.composite
def rich_conversations(draw: st.DrawFn, max_turns: int = 4) -> list[Message]:
    """A valid conversation using every known block type and some unknown ones, with
    messages from a word to far beyond any window, and server calls wherever a turn has
    them: answered in their reply, made beside client calls, and paused turns (several in a
    row, mid-turn or last), each reply after one of those two starting with the results of
    the calls it left to run."""
    ids = itertools.count(1)
    messages: list[Message] = []
    # With interleaved thinking every reply opens with its (signed or redacted) thinking,
    # right after the server results it carries, if any.
    thinks = draw(st.booleans())

    def thought() -> list[Block]:
        if not thinks:
            return []
        if draw(st.integers(0, 4)) == 0:
            return [RedactedThinkingBlock("RVhBTVBMRQ==")]
        # Thinking is never reduced, so it is drawn at sizes a model writes in one turn.
        first = ThinkingBlock(draw(text), f"sig{next(ids)}==")
        if draw(st.integers(0, 4)) == 0:
            # A refusal handed the reply to a fallback model: each model's thinking on its
            # side of the `fallback` block (build-with-claude/refusals-and-fallback).
            return [first, FALLBACK, ThinkingBlock(draw(text), f"sig{next(ids)}==")]
        return [first]

    def waiting() -> tuple[list[Block], list[Block]]:
        """Server calls not run yet, and their results, which lead the next reply."""
        pairs = [server_pair(draw, ids) for _ in range(draw(st.integers(1, 2)))]
        return [p[0] for p in pairs], [p[1] for p in pairs]

    for _ in range(draw(st.integers(1, max_turns))):
        messages.append(prompt(draw))
        # The results of server calls the reply before left to run, leading the next one
        # (agents-and-tools/tool-use/server-tools).
        carried: list[Block] = []
        for _ in range(draw(st.integers(0, 6))):
            head: list[Block] = [*carried, *thought()]
            carried = []
            if draw(st.integers(0, 3)) == 0:
                head.extend(server_pair(draw, ids))
            if draw(st.integers(0, 4)) == 0:
                head.append(future_block(draw))
            if draw(st.integers(0, 5)) == 0:
                head.append(MCP_LISTING)
            if draw(st.integers(0, 2)) == 0:
                # A paused turn (`pause_turn`): it ends in a server call not run yet, or in
                # a result, and the next reply continues it.
                if draw(st.integers(0, 3)) == 0:
                    head.extend(server_pair(draw, ids)[:2])
                else:
                    calls, carried = waiting()
                    head.extend(calls)
                messages.append(Message(Role.ASSISTANT, tuple(head)))
                continue
            if draw(st.integers(0, 3)) == 0:
                # A server call beside client calls runs when their results come back.
                calls, carried = waiting()
                head.extend(calls)
            uses = [
                ToolUseBlock(
                    f"toolu_{next(ids):05d}",
                    draw(st.sampled_from(TOOL_NAMES)),
                    {"path": draw(text), "content": sized_text(draw), "lines": [1, 2]},
                )
                for _ in range(draw(st.integers(1, 2)))
            ]
            messages.append(Message(Role.ASSISTANT, (*head, *uses)))
            messages.append(
                Message(Role.USER, tuple(ToolResultBlock(c.id, tool_output(draw)) for c in uses))
            )
        closing: list[Block] = [*carried, *thought()]
        if draw(st.booleans()):
            closing.extend(server_pair(draw, ids))
        closing.append(TextBlock(sized_text(draw)))
        messages.append(Message(Role.ASSISTANT, tuple(closing)))
    return messages


def future_blocks(bodies: list[dict[str, Any]]) -> list[str]:
    found = []
    for body in bodies:
        for message in body["messages"]:
            for block in message["content"]:
                nested = block.get("content") if block["type"] == "tool_result" else None
                for item in [block, *(nested if isinstance(nested, list) else [])]:
                    if item["type"] in FUTURE_TYPES:
                        found.append(json.dumps(item, ensure_ascii=False, separators=(",", ":")))
    return found


@PROPERTY
@given(
    rich_conversations(),
    st.tuples(st.integers(4_000, 20_000), st.integers(300, 2_000)),
    st.sampled_from(["default", "tight"]),
)
def test_every_block_type_gives_valid_in_budget_requests_and_unknown_ones_pass_unchanged(
    messages: list[Message], window: tuple[int, int], knobs: str
) -> None:
    settings_ = (
        CompactionSettings()
        if knobs == "default"
        else CompactionSettings(threshold_ratio=0.5, keep_recent_turns=1, retained_share=0.2)
    )
    app = Sessions(
        counter=COUNTER,
        summarizer=ExtractiveSummarizer(COUNTER),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        # Messages past the byte cap are refused at append (tests/reliability); here the
        # point is what the view makes of any size the cap allows.
        max_message_bytes=HUGE_MESSAGE_BYTES,
    )
    session_id = app.start_session(
        model="claude-test",
        context_window=window[0],
        max_output_tokens=window[1],
        system="You are a research agent.",
        tools=TOOLS,
        settings=settings_,
    )
    bodies: list[dict[str, Any]] = []
    fed: list[Message] = []
    for message in [*messages, Message.user("And now?")]:
        if message.role is Role.ASSISTANT:
            # Never refused: whatever was appended, the next request is built and fits.
            prepared = app.prepare_request(session_id)
            calibration = app.session(session_id).calibration
            bodies.append(check_request(prepared, COUNTER, calibration, FUTURE_TYPES))
            before = len(app.history(session_id))
            try:
                app.record_reply(session_id, message)
            except ContextTooSmallError:
                # Only what no view can reduce (thinking, server calls, the shape of their
                # results) outgrew the budget: nothing is written, and the turn goes on
                # from before it.
                assert len(app.history(session_id)) == before
                break
        else:
            app.append_message(session_id, message)
        fed.append(message)
    prepared = app.prepare_request(session_id)
    bodies.append(
        check_request(prepared, COUNTER, app.session(session_id).calibration, FUTURE_TYPES)
    )

    history = [e.message for e in app.history(session_id) if isinstance(e, Session.MessageAppended)]
    assert history == fed
    fed_future = {
        block.json
        for m in fed
        for b in m.content
        for block in (
            [b, *b.content]
            if isinstance(b, ToolResultBlock) and not isinstance(b.content, str)
            else [b]
        )
        if isinstance(block, WireBlock) and block.type in FUTURE_TYPES
    }
    # Unknown blocks go out byte for byte as they were fed (or their message is summarized).
    assert set(future_blocks(bodies)) <= fed_future
    # And the last request still carries those of the retained messages.
    retained = {
        block.json
        for entry in app.session(session_id).entries
        for block in entry.message.content
        if isinstance(block, WireBlock) and block.type in FUTURE_TYPES
    }
    assert retained <= set(future_blocks(bodies[-1:]))


@PROPERTY
@given(rich_conversations(), st.tuples(st.integers(4_000, 20_000), st.integers(300, 2_000)))
def test_replaying_the_events_reproduces_every_reduced_view(
    messages: list[Message], window: tuple[int, int]
) -> None:
    app = Sessions(
        counter=COUNTER,
        summarizer=ExtractiveSummarizer(COUNTER),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        # Messages past the byte cap are refused at append (tests/reliability); here the
        # point is what the view makes of any size the cap allows.
        max_message_bytes=HUGE_MESSAGE_BYTES,
    )
    session_id = app.start_session(
        model="claude-test", context_window=window[0], max_output_tokens=window[1], tools=TOOLS
    )
    for message in messages:
        if message.role is Role.ASSISTANT:
            app.prepare_request(session_id)
            try:
                app.record_reply(session_id, message)
            except ContextTooSmallError:
                break  # nothing written: the turn goes on from before it
        else:
            app.append_message(session_id, message)

    replayed = None
    for event in app.history(session_id):
        replayed = event.mutate(replayed)
    live = app.session(session_id)
    assert replayed is not None
    assert [e.shown_message for e in replayed.entries] == [e.shown_message for e in live.entries]
    assert replayed.tail_tokens == live.tail_tokens
