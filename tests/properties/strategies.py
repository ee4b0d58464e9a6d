"""Hypothesis strategies for whole agent conversations."""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

from abridged.domain.messages import (
    Block,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireBlock,
)

TOOL_NAMES = ("run_command", "read_file", "edit_file", "search_code")
TOOLS = tuple(
    {"name": n, "description": f"{n} tool", "input_schema": {"type": "object"}} for n in TOOL_NAMES
)

ODD = [
    "<|endoftext|>",
    "e\u0301\u0301",
    "\u200b\u200d",
    "🧑‍💻🏳️‍🌈",
    "\x00\x07",
    "שלום",
    "日本語のテキスト",
    "\ufeff",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
]

text = st.one_of(
    st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=80),
    st.sampled_from(ODD),
    st.builds(
        lambda w, n: " ".join([w] * n), st.sampled_from(["token", "数据", "x"]), st.integers(1, 400)
    ),
).filter(lambda t: bool(t.strip()))


def output(draw: st.DrawFn) -> str:
    size = draw(st.sampled_from(["small", "small", "medium", "huge"]))
    if size == "small":
        return draw(st.one_of(st.just(""), text))
    return lines(draw, size == "huge")


def lines(draw: st.DrawFn, huge: bool) -> str:
    """Numbered lines: 40 of them, or (`huge`) up to about 100 KB."""
    line = draw(text)
    repeat = draw(st.integers(300, 1_500)) if huge else 40
    # A long line repeated that often made outputs of megabytes: 100 KB is past the largest
    # window any property draws (12,000 tokens) whatever the line, and the rest only cost time.
    repeat = min(repeat, max(40, 100_000 // (len(line) + 7)))
    return "\n".join(f"{i}: {line}" for i in range(repeat))


@st.composite
def conversations(draw: st.DrawFn, max_turns: int = 5) -> list[Message]:
    """A valid conversation: turns of a prompt, tool exchanges (some parallel, some led by
    thinking, some failing), and an answer. It may end mid-turn."""
    ids = itertools.count(1)
    messages: list[Message] = []
    for _ in range(draw(st.integers(1, max_turns))):
        prompt: list[Block] = [TextBlock(draw(text))]
        if draw(st.integers(0, 5)) == 0:
            # A pasted log: more than half a request's room, whole or not, or more than all.
            prompt = [TextBlock(lines(draw, draw(st.booleans())))]
        if draw(st.booleans()) and draw(st.booleans()):
            prompt.append(ImageBlock("base64", media_type="image/png", data="iVBORw0KGgo="))
        messages.append(Message.user(*prompt))
        for _ in range(draw(st.integers(0, 12))):
            head: list[Block] = []
            if draw(st.booleans()):
                if draw(st.integers(0, 4)) == 0:
                    head.append(RedactedThinkingBlock("RVhBTVBMRQ=="))
                else:
                    head.append(ThinkingBlock(draw(text), f"sig{next(ids)}=="))
            if draw(st.booleans()):
                head.append(TextBlock(draw(text)))
            calls = [
                ToolUseBlock(
                    f"toolu_{next(ids):05d}",
                    draw(st.sampled_from(TOOL_NAMES)),
                    {"command": draw(text), "n": draw(st.integers())},
                )
                for _ in range(draw(st.integers(1, 3)))
            ]
            messages.append(Message.assistant(*head, *calls))
            order = draw(st.permutations(calls))
            results: list[Block] = [
                ToolResultBlock(c.id, output(draw), is_error=draw(st.booleans())) for c in order
            ]
            if draw(st.integers(0, 5)) == 0:
                results.append(TextBlock(draw(text)))
            messages.append(Message.user(*results))
        if draw(st.integers(0, 4)):
            messages.append(Message.assistant(draw(text)))
        else:
            break
    return messages


SERVER_TOOLS = (
    {"type": "web_fetch_20250910", "name": "web_fetch"},
    {"type": "web_search_20250305", "name": "web_search"},
    {"type": "code_execution_20250825", "name": "code_execution"},
)
"""The server tools a paused chain calls, for the request's `tools`."""


def server_call(draw: st.DrawFn, call_id: str) -> WireBlock:
    name = draw(st.sampled_from(["web_fetch", "web_search", "code_execution"]))
    return WireBlock.of(
        {"type": "server_tool_use", "id": call_id, "name": name, "input": {"q": draw(text)}}
    )


def server_result(draw: st.DrawFn, call: WireBlock) -> WireBlock:
    """The result of `call`: a fetched document, search results (their encrypted parts go
    back unchanged) or a program's output, from a line to past any window drawn."""
    wire = call.to_wire()
    name, call_id = wire["name"], wire["id"]
    if name == "web_fetch":
        page = {"type": "text", "media_type": "text/plain", "data": output(draw) or "(empty)"}
        content: object = {
            "type": "web_fetch_result",
            "url": "https://example.com/page",
            "content": {"type": "document", "source": page},
        }
    elif name == "web_search":
        content = [
            {
                "type": "web_search_result",
                "url": f"https://example.com/{k}",
                "title": draw(text),
                "encrypted_content": "RW5jcnlwdGVk",
                "page_age": None,
            }
            for k in range(draw(st.integers(1, 5)))
        ]
    else:
        content = {
            "type": "code_execution_result",
            "stdout": output(draw),
            "stderr": "",
            "return_code": 0,
        }
    return WireBlock.of({"type": f"{name}_tool_result", "tool_use_id": call_id, "content": content})


@st.composite
def paused_chains(draw: st.DrawFn, max_links: int = 10) -> list[Message]:
    """Turns in which the model pauses (`stop_reason: "pause_turn"`) again and again: each
    reply after the first starts with the results of the server calls the one before made,
    may lead with thinking, and ends in a new server call, some beside a client call whose
    result comes back first; the last reply answers. Nothing in such a chain can be cut."""
    ids = itertools.count(1)
    messages: list[Message] = []
    for _ in range(draw(st.integers(1, 2))):
        messages.append(Message.user(draw(text)))
        carried: list[Block] = []
        for _ in range(draw(st.integers(1, max_links))):
            head: list[Block] = list(carried)
            if draw(st.booleans()):
                head.append(ThinkingBlock(draw(text), f"sig{next(ids)}=="))
            if draw(st.booleans()):
                head.append(TextBlock(draw(text)))
            calls = [server_call(draw, f"srvtoolu_{next(ids):05d}")]
            carried = [server_result(draw, c) for c in calls]
            if draw(st.integers(0, 3)) == 0:
                client = ToolUseBlock(f"toolu_{next(ids):05d}", "read_file", {"path": draw(text)})
                messages.append(Message.assistant(*head, *calls, client))
                messages.append(Message.user(ToolResultBlock(client.id, output(draw))))
            else:
                messages.append(Message.assistant(*head, *calls))
        messages.append(Message.assistant(*carried, TextBlock(draw(text))))
    return messages
