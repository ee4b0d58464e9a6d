"""How one reducible block is cut to about a number of tokens, for
`abridged.domain.degradation`: long strings head and tail (a tool call's input and a server
tool's result keep their shape), images, documents and search results as placeholders."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from abridged.domain.messages import (
    SERVER_TOOL_RESULT_TYPES,
    Block,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireBlock,
)
from abridged.domain.tokens import CountText, block_tokens
from abridged.domain.truncation import Truncation, shown


def reduce_block(
    message: Message,
    index: int,
    allowed: int,
    count: CountText,
    whole: int | None = None,
    salient: tuple[int, int] = (0, 1),
) -> tuple[Truncation, int] | None:
    """The block of `message` at `index` cut to show in about `allowed` tokens, and its
    count as shown; `whole` is its count uncut, when known, to size the first cut."""
    block = message.content[index]

    def tokens_of(truncation: Truncation) -> int:
        return block_tokens(shown(message, (truncation,)).content[index], count)

    if shown_whole_or_not(block):
        placeholder = Truncation(index, 0, 0)
        return placeholder, tokens_of(placeholder)
    if isinstance(block, ToolUseBlock):
        size = _longest_string(block.input)
    elif isinstance(block, WireBlock) and block.type in SERVER_TOOL_RESULT_TYPES:
        size = _longest_string(block.to_wire())
    elif isinstance(block, ToolResultBlock | TextBlock):
        size = len(block.text)
    else:  # not reducible: left as it is
        return None
    first = int(size * allowed / whole * DENSITY_MARGIN) if whole else allowed * 4
    if not isinstance(block, TextBlock) or size > SALIENT_TEXT_CHARS:
        salient = (0, salient[1])
    truncation, tokens = _shrink(index, size, allowed, tokens_of, first, salient)
    if isinstance(block, ToolUseBlock):
        # Short strings in great number (20,000 edits, a matrix of numbers) stay over the
        # share with every string cut: the longest lists and objects keep their ends.
        items = _widest(block.input)
        while tokens > allowed and items > 1:
            items = max(1, min(items // 2, int(items * allowed / tokens)))
            truncation = attrs.evolve(truncation, items=items)
            tokens = tokens_of(truncation)
    return truncation, tokens


SALIENT_TEXT_CHARS = 256_000
"""A text block up to this long keeps salient lines when cut (a pasted log, a traceback). A
longer one is cut to head and tail only: scanning its middle would cost about 10 ms a
shrinking step for a megabyte, on the path of the request that brings it."""


DENSITY_MARGIN = 0.97
"""A cut sized from a text's density keeps a little less than its share, since the density
varies along the text."""


def shown_whole_or_not(block: Block) -> bool:
    """Whether a reducible block is shown whole or as a placeholder, never in part: an
    image, a document, a search result (its text is not cut)."""
    if isinstance(block, ImageBlock):
        return True
    if isinstance(block, WireBlock):
        return block.type not in SERVER_TOOL_RESULT_TYPES
    return False


def _shrink(
    index: int,
    size: int,
    allowed: int,
    tokens_of: Callable[[Truncation], int],
    first: int,
    salient: tuple[int, int] = (0, 1),
) -> tuple[Truncation, int]:
    # Token density varies along a text, so shrink until the shown block counts within budget:
    # by the density just counted when far over, by 15% at least.
    keep = max(min(size, first), 0)
    while True:
        kept = max(0, min(salient[0], keep // 3))
        head = ((keep - kept) * 2) // 3
        truncation = Truncation(index, head, keep - kept - head, kept, salient[1])
        tokens = tokens_of(truncation)
        if tokens <= allowed or keep <= 0:
            return truncation, tokens
        keep = min(int(keep * 0.85), int(keep * allowed / tokens * DENSITY_MARGIN))


def _widest(value: object) -> int:
    """The most items any list or object in `value` holds."""
    if isinstance(value, dict):
        return max([len(value), *(_widest(v) for v in value.values())])
    if isinstance(value, list | tuple):
        return max([len(value), *(_widest(v) for v in value)])
    return 0


def _longest_string(value: object) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max((_longest_string(v) for v in value.values()), default=0)
    if isinstance(value, list | tuple):
        return max((_longest_string(v) for v in value), default=0)
    return 0
