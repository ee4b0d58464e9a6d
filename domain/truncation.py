"""Showing a large tool output as its head and tail, with a marker saying how much was cut.

The marker keeps the salient lines of the cut middle (errors, failing tests, traceback frames,
paths; `abridged.domain.salience`) up to the truncation's `salient_chars`."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from abridged.domain.messages import Block, ImageBlock, Message, TextBlock, ToolResultBlock
from abridged.domain.salience import elided, salient_lines
from abridged.domain.tokens import TOOL_OVERHEAD, CountText


@attrs.frozen
class Replacement:
    """A block shown differently from how it is stored: pruned, or reasoning downgraded.

    `text` is what a tool_result shows, or the plain text a thinking block becomes; `None`
    drops the block from requests.
    """

    block_index: int
    text: str | None


@attrs.frozen
class Truncation:
    """One tool_result of a message shown as `head_chars` + marker + `tail_chars` of its text."""

    block_index: int
    head_chars: int
    tail_chars: int
    salient_chars: int = 0
    """At most this many characters of salient lines from the cut middle are shown (0 in
    events recorded before salient truncation, which show as they did)."""


def marker(cut_chars: int) -> str:
    return f"\n\n[… {cut_chars:,} characters of tool output truncated …]\n\n"


def truncate_text(text: str, head_chars: int, tail_chars: int, salient_chars: int = 0) -> str:
    cut = len(text) - head_chars - tail_chars
    if cut <= 0:
        return text
    tail = text[len(text) - tail_chars :] if tail_chars else ""
    middle = salient_lines(text[head_chars : len(text) - tail_chars], salient_chars)
    if not middle:
        return text[:head_chars] + marker(cut) + tail
    return f"{text[:head_chars]}\n\n{elided(cut, middle)}\n\n{tail}"


def shown(
    message: Message,
    truncations: tuple[Truncation, ...],
    replacements: tuple[Replacement, ...] = (),
) -> Message:
    """The message as requests show it; the stored message is never changed."""
    if not truncations and not replacements:
        return message
    content: list[Block | None] = list(message.content)
    for t in truncations:
        block = content[t.block_index]
        assert isinstance(block, ToolResultBlock)
        text = truncate_text(block.text, t.head_chars, t.tail_chars, t.salient_chars)
        images = (
            0
            if isinstance(block.content, str)
            else sum(1 for b in block.content if isinstance(b, ImageBlock))
        )
        if images:
            text = f"{text}\n[{images} image(s) of this tool output omitted: too large]".strip()
        content[t.block_index] = ToolResultBlock(block.tool_use_id, text, block.is_error)
    for r in replacements:
        original = message.content[r.block_index]
        if r.text is None:
            content[r.block_index] = None
        elif isinstance(original, ToolResultBlock):
            content[r.block_index] = ToolResultBlock(
                original.tool_use_id, r.text, original.is_error
            )
        else:
            content[r.block_index] = TextBlock(r.text)
    return attrs.evolve(message, content=tuple(b for b in content if b is not None))


def plan_truncations(
    message: Message,
    limit: int,
    count: CountText,
    block_counts: Sequence[int],
    salient_chars: int = 0,
) -> tuple[tuple[Truncation, ...], tuple[int, ...]]:
    """Truncations that bring the message's tool outputs to about `limit` tokens in all.

    `block_counts` are the message's per-block counts (`block_tokens`), so nothing already
    counted is counted again. Small outputs stay whole; the large ones share what is left
    (water-filling), each cut to head and tail, keeping up to `salient_chars` (at most a third
    of what is shown) of salient lines from the middle. Returns the truncations and the shown
    message's per-block counts.
    """
    results = [
        (i, b, block_counts[i] - TOOL_OVERHEAD)
        for i, b in enumerate(message.content)
        if isinstance(b, ToolResultBlock)
    ]
    shown_counts = list(block_counts)
    if sum(tokens for _, _, tokens in results) <= limit:
        return (), tuple(shown_counts)
    allowance = _fair_shares([tokens for _, _, tokens in results], limit)
    truncations: list[Truncation] = []
    for (index, block, tokens), allowed in zip(results, allowance, strict=True):
        if tokens <= allowed:
            continue
        truncation, shown_tokens = _fit(index, block.text, tokens, allowed, count, salient_chars)
        truncations.append(truncation)
        shown_counts[index] = TOOL_OVERHEAD + shown_tokens
    return tuple(truncations), tuple(shown_counts)


def _fair_shares(sizes: list[int], limit: int) -> list[int]:
    shares = [0] * len(sizes)
    remaining = limit
    pending = sorted(range(len(sizes)), key=lambda i: sizes[i])
    while pending:
        fair = remaining // len(pending)
        index = pending[0]
        if sizes[index] <= fair:
            shares[index] = sizes[index]
            remaining -= sizes[index]
            pending.pop(0)
            continue
        for index in pending:
            shares[index] = max(fair, 16)
        break
    return shares


def _fit(
    index: int, text: str, tokens: int, allowed: int, count: CountText, salient_chars: int
) -> tuple[Truncation, int]:
    # Token density varies along a text, so shrink until the shown text counts within budget.
    keep = int(len(text) * allowed / max(tokens, 1))
    while True:
        salient = max(0, min(salient_chars, keep // 3))
        head = max(0, ((keep - salient) * 2) // 3)
        tail = max(0, keep - salient - head)
        shown_tokens = count(truncate_text(text, head, tail, salient))
        if keep <= 0 or shown_tokens <= allowed:
            return Truncation(index, head, tail, salient), shown_tokens
        keep = int(keep * 0.85)
