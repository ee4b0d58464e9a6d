"""What `tests.support.real_traffic` checks on the requests it sends through the proxy,
and the fake upstream made to stream a real log's blocks whole."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from tests.support import fake_anthropic as fake


def _blocks(content: Any) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


STREAMED_FIELDS = frozenset({"input", "text", "thinking", "signature"})
"""The fields a streamed block's deltas carry; every other field comes with its start."""


@contextmanager
def whole_blocks_streamed() -> Iterator[None]:
    """The fake upstream streams every field of a block: its own stream leaves out those
    it does not know (a real log's `caller` of a tool call), which the API's
    `content_block_start` carries."""
    original = fake._block_events

    def events(index: int, block: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for number, (name, data) in enumerate(original(index, block)):
            if number == 0 and name == "content_block_start":
                extra = {k: v for k, v in block.items() if k not in STREAMED_FIELDS}
                yield name, {**data, "content_block": {**data["content_block"], **extra}}
            else:
                yield name, data

    fake._block_events = events
    try:
        yield
    finally:
        fake._block_events = original


def plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items() if k != "cache_control" and v is not None}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def last_breakpoint(messages: Sequence[Any]) -> tuple[int, int] | None:
    """The (message, block) of the last `cache_control` among `messages`."""
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i]["content"]
        if isinstance(content, list):
            for j in range(len(content) - 1, -1, -1):
                if isinstance(content[j], Mapping) and "cache_control" in content[j]:
                    return i, j
    return None


def cached_prefix_kept(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Whether `after` repeats `before`'s prompt up to its last message breakpoint, byte
    for byte (the markers aside), under the same model, system prompt and tools."""
    if any(plain(before.get(f)) != plain(after.get(f)) for f in ("model", "system", "tools")):
        return False
    mark = last_breakpoint(before["messages"])
    if mark is None:
        return True
    i, j = mark
    earlier, later = before["messages"], after["messages"]
    if len(later) <= i or plain(earlier[:i]) != plain(later[:i]):
        return False
    head = _blocks(earlier[i]["content"])[: j + 1]
    return bool(plain(head) == plain(_blocks(later[i]["content"])[: j + 1]))
