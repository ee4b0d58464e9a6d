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
