"""Small builders for conversations in tests."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from abridged.domain.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

_ids = itertools.count(1)


def tool_id() -> str:
    return f"toolu_{next(_ids):06d}"


def exchange(
    outputs: list[str], *, name: str = "run_command", text: str = "", errors: bool = False
) -> tuple[Message, Message]:
    """An assistant message calling one tool per output (parallel when several), and the
    user message with all their results."""
    ids = [tool_id() for _ in outputs]
    calls = [ToolUseBlock(i, name, {"command": f"step {i}"}) for i in ids]
    head = [TextBlock(text)] if text else []
    results = [
        ToolResultBlock(i, out, is_error=errors) for i, out in zip(ids, outputs, strict=True)
    ]
    return Message.assistant(*head, *calls), Message.user(*results)


def thinking_exchange(output: str, *, thought: str = "Let me look.") -> tuple[Message, Message]:
    i = tool_id()
    return (
        Message.assistant(ThinkingBlock(thought, "sig-" + i), ToolUseBlock(i, "read_file", {})),
        Message.user(ToolResultBlock(i, output)),
    )


def turn(prompt: str, outputs: list[str], answer: str = "Done.") -> Iterator[Message]:
    """A user prompt, one tool exchange per output, and a final answer."""
    yield Message.user(prompt)
    for output in outputs:
        yield from exchange([output])
    yield Message.assistant(answer)


TOOLS = tuple(
    {"name": name, "description": f"The {name} tool.", "input_schema": {"type": "object"}}
    for name in ("run_command", "read_file")
)


def words(n: int, word: str = "word") -> str:
    """Text of `n` words: `n` tokens for the fake counter."""
    return " ".join([word] * n)


def web_fetch(i: int) -> dict[str, Any]:
    """A `web_fetch` server call, as the API returns it (its id `srvtoolu_{i}`)."""
    return {
        "type": "server_tool_use",
        "id": f"srvtoolu_{i}",
        "name": "web_fetch",
        "input": {"url": f"https://example.com/{i}"},
    }


def web_fetched(i: int, size: int) -> dict[str, Any]:
    """The result of `web_fetch(i)`: a text page of `size` words."""
    page = {"type": "text", "media_type": "text/plain", "data": words(size, f"page{i}")}
    return {
        "type": "web_fetch_tool_result",
        "tool_use_id": f"srvtoolu_{i}",
        "content": {
            "type": "web_fetch_result",
            "url": f"https://example.com/{i}",
            "content": {"type": "document", "source": page},
        },
    }
