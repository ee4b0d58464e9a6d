"""A prompt-cache cost model: what a sequence of requests is billed under prompt caching.

The model follows Anthropic's documented rules, simplified where they do not change who wins:

- A request is a sequence of blocks in cache order: tools, system, then each message's
  content blocks. Blocks marked `cache_control` are breakpoints.
- A cache entry is the exact prefix ending at a breakpoint of an earlier request.
- For each breakpoint the API looks for an entry ending at that block or at one of the
  `lookback` (20) block boundaries before it; the longest prefix found is read from cache.
- Everything after the read prefix up to the request's last breakpoint is written to cache;
  the rest (after the last breakpoint) is plain input.
- Billed input = read × `read_rate` + written × `write_rate` + plain × 1.

Entries never expire here (every request of a replay follows the last within the TTL), and
the minimum cacheable length is ignored: both apply to every strategy alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from abridged.domain.tokens import BLOCK_OVERHEAD, TOOL_OVERHEAD

DEFAULT_LOOKBACK = 20
DEFAULT_WRITE_RATE = 1.25
DEFAULT_READ_RATE = 0.1


@attrs.frozen
class CacheRates:
    """Prices of cached input relative to plain input, and the API's lookback."""

    write_rate: float = DEFAULT_WRITE_RATE
    read_rate: float = DEFAULT_READ_RATE
    lookback: int = DEFAULT_LOOKBACK


@attrs.frozen
class Billing:
    """One request's input tokens, split the way the API bills them."""

    total: int
    read: int
    written: int

    @property
    def plain(self) -> int:
        return self.total - self.read - self.written

    def billed(self, rates: CacheRates) -> float:
        return self.read * rates.read_rate + self.written * rates.write_rate + self.plain


@attrs.frozen
class CachedBlock:
    """One block of a request: its identity (canonical JSON), tokens and breakpoint."""

    key: str
    tokens: int
    breakpoint: bool


def block_text(block: Mapping[str, Any]) -> str:
    """The text a block carries, for counting and for looking facts up."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "thinking":
        return str(block.get("thinking", ""))
    if kind == "tool_use":
        return f"{block.get('name', '')} {json.dumps(block.get('input', {}), ensure_ascii=False)}"
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, str):
            return content
        return "\n".join(block_text(b) for b in content if isinstance(b, Mapping))
    if kind in {"image", "redacted_thinking"}:
        return ""
    if kind == "compaction":
        # The API's summary: its text is what the model reads and what the API counts.
        return str(block.get("content") or "")
    return json.dumps(block, ensure_ascii=False)


def request_blocks(body: Mapping[str, Any], count: Callable[[str], int]) -> list[CachedBlock]:
    """The blocks of a request body in cache order, counted (counts are memoized by key)."""
    blocks: list[CachedBlock] = []
    for tool in body.get("tools", ()):
        blocks.append(_cached(tool, count, TOOL_OVERHEAD))
    system = body.get("system")
    if isinstance(system, str) and system:
        blocks.append(_cached({"type": "text", "text": system}, count, BLOCK_OVERHEAD))
    elif isinstance(system, list):
        blocks.extend(_cached(b, count, BLOCK_OVERHEAD) for b in system)
    for message in body.get("messages", ()):
        content = message.get("content") or []
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content:
            blocks.append(_cached({**block, "role": message["role"]}, count, BLOCK_OVERHEAD))
    return blocks


def _cached(block: Mapping[str, Any], count: Callable[[str], int], overhead: int) -> CachedBlock:
    marked = "cache_control" in block
    plain = {k: v for k, v in block.items() if k != "cache_control"}
    key = json.dumps(plain, ensure_ascii=False, sort_keys=True)
    if block.get("type") == "image":
        return CachedBlock(key, 1600, marked)
    text = block_text(plain) if "type" in plain else json.dumps(plain, ensure_ascii=False)
    return CachedBlock(key, overhead + count(text), marked)


class PromptCache:
    """The cache entries one conversation has written so far, and the billing of requests."""

    def __init__(self, rates: CacheRates | None = None) -> None:
        self.rates = rates or CacheRates()
        self._entries: set[int] = set()

    def bill(self, blocks: Sequence[CachedBlock]) -> Billing:
        """Bills one request and records the entries its breakpoints write."""
        prefix_hashes: list[int] = []
        cumulative: list[int] = []
        running_hash = 0
        running_tokens = 0
        for block in blocks:
            running_hash = hash((running_hash, block.key))
            running_tokens += block.tokens
            prefix_hashes.append(running_hash)
            cumulative.append(running_tokens)
        breakpoints = [k for k, b in enumerate(blocks) if b.breakpoint]
        total = running_tokens
        if not breakpoints:
            return Billing(total, 0, 0)
        read_end = -1
        for point in breakpoints:
            for k in range(point, max(-1, point - self.rates.lookback - 1), -1):
                if k <= read_end:
                    break
                if prefix_hashes[k] in self._entries:
                    read_end = k
                    break
        read = cumulative[read_end] if read_end >= 0 else 0
        last = breakpoints[-1]
        written = max(0, cumulative[last] - read)
        for point in breakpoints:
            self._entries.add(prefix_hashes[point])
        return Billing(total, read, written)
