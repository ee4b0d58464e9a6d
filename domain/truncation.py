"""Showing a large block as its head and tail, with a marker saying how much was cut.

A tool output, a long text, the long strings of a tool call's input: each is shown head and
tail. An image or document too large for the budget is shown as a short placeholder. A tool
output's marker keeps the salient lines of its cut middle (errors, failing tests, traceback
frames, paths; `abridged.domain.salience`) up to the truncation's `salient_chars`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar, cast

import attrs

from abridged.domain.messages import (
    JSON,
    SERVER_TOOL_RESULT_TYPES,
    Block,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireBlock,
)
from abridged.domain.salience import elided, salient_lines
from abridged.domain.tokens import TOOL_OVERHEAD, CountText, block_tokens


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
    """One block of a message shown reduced, by its kind: a tool_result or a text block as
    `head_chars` + marker + `tail_chars` of its text; a tool_use with each long string of
    its input so; an image or document as a placeholder naming its type and size."""

    block_index: int
    head_chars: int
    tail_chars: int
    salient_chars: int = 0
    """A tool output or a text block keeps at most this many characters of salient lines
    from its cut middle (0 in events recorded before salient truncation, which show as they
    did)."""
    salient_rules: int = 1
    """The rules that chose those lines (`abridged.domain.salience`; 1 in events recorded
    before there were others)."""
    items: int = 0
    """A tool call's input: a list or object of more than this many items shows its first
    and last ones, a marker naming how many were left out between them, when cutting its
    strings is not enough (a call of 20,000 short edits, a matrix of numbers). 0 leaves
    every item, as events recorded before showed them."""


def marker(cut_chars: int) -> str:
    return f"\n\n[… {cut_chars:,} characters of tool output truncated …]\n\n"


def text_marker(cut_chars: int) -> str:
    return f"\n\n[… {cut_chars:,} characters of this message truncated …]\n\n"


def string_marker(cut_chars: int) -> str:
    return f" [… {cut_chars:,} characters truncated …] "


REMEMBERED_TEXT_CHARS = 8 * 1024
"""Texts from this long are worth remembering: finding the salient lines of their middle
costs milliseconds, looking one up a hash of the text (kept in the string once made)."""
REMEMBERED_TRUNCATIONS = 64
"""How many large texts' cuts are remembered, per way of cutting (the texts are held with
them)."""


C = TypeVar("C", bound=Callable[[str, int, int, int, int], str])


def remembered(cut: C) -> C:
    """`cut(text, head, tail, salient_chars, rules)`, its result remembered for the last
    `REMEMBERED_TRUNCATIONS` large texts cut with salient lines: the same output is shown the
    same way at every request, index update and reload (`inspect.unwrap` gives the function
    that cuts afresh)."""
    cache = functools.lru_cache(maxsize=REMEMBERED_TRUNCATIONS)(cut)

    @functools.wraps(cut)
    def call(text: str, head: int, tail: int, salient_chars: int = 0, rules: int = 1) -> str:
        if salient_chars > 0 and len(text) >= REMEMBERED_TEXT_CHARS:
            return cache(text, head, tail, salient_chars, rules)
        return cut(text, head, tail, salient_chars, rules)

    return cast(C, call)


@remembered
def truncate_text(
    text: str, head_chars: int, tail_chars: int, salient_chars: int = 0, rules: int = 1
) -> str:
    """`text` as its head and tail, the marker keeping up to `salient_chars` of the cut
    middle's salient lines, chosen by `rules` (remembered for large texts: `remembered`)."""
    return _salient_cut(text, head_chars, tail_chars, (salient_chars, rules), "tool output", marker)


@remembered
def truncate_message_text(
    text: str, head_chars: int, tail_chars: int, salient_chars: int = 0, rules: int = 1
) -> str:
    """A message's text block as `truncate_text` shows a tool output: a log or a traceback
    the user pasted keeps the lines that matter from its cut middle too."""
    return _salient_cut(
        text, head_chars, tail_chars, (salient_chars, rules), "this message", text_marker
    )


LINE_SNAP = 240
"""Rules 3: a head that would end within this many characters of its last line end ends
there, and a tail that would start within as many of its first line start starts there (a
line's cap of salient lines, `salience.LINE_CHARS`), and never more than a quarter of the
head or tail: a line split between them goes whole to the cut middle, where the salient
lines may take it."""


def line_cut(text: str, head_chars: int, tail_chars: int) -> tuple[int, int]:
    """`head_chars` and `tail_chars` moved in to the nearest line ends within `LINE_SNAP`
    (never out: what is shown only shrinks, so it still fits what it was measured for)."""
    if len(text) - head_chars - tail_chars <= 0:
        return head_chars, tail_chars
    if head_chars > 0 and text[head_chars - 1] != "\n":
        end = text.rfind("\n", head_chars - min(LINE_SNAP, head_chars // 4), head_chars)
        if end >= 0:
            head_chars = end + 1
    start = len(text) - tail_chars
    if tail_chars > 0 and text[start - 1] != "\n":
        begin = text.find("\n", start, start + min(LINE_SNAP, tail_chars // 4))
        if begin >= 0:
            tail_chars = len(text) - begin - 1
    return head_chars, tail_chars


def _salient_cut(
    text: str,
    head_chars: int,
    tail_chars: int,
    salient: tuple[int, int],
    what: str,
    mark: Callable[[int], str],
) -> str:
    if salient[1] >= 3:
        head_chars, tail_chars = line_cut(text, head_chars, tail_chars)
    middle = salient_lines(text[head_chars : len(text) - tail_chars], *salient)
    if not middle or len(text) - head_chars - tail_chars <= 0:
        return _cut(text, head_chars, tail_chars, mark)
    cut = len(text) - head_chars - tail_chars
    tail = text[len(text) - tail_chars :] if tail_chars else ""
    return f"{text[:head_chars]}\n\n{elided(cut, middle, what)}\n\n{tail}"


def _cut(text: str, head_chars: int, tail_chars: int, mark: Callable[[int], str]) -> str:
    cut = len(text) - head_chars - tail_chars
    if cut <= 0:
        return text
    tail = text[len(text) - tail_chars :] if tail_chars else ""
    return text[:head_chars] + mark(cut) + tail


OPAQUE_KEYS = frozenset(
    {"type", "id", "tool_use_id", "url", "media_type", "file_id", "signature", "title"}
)
"""Keys of a server tool's result whose values are never cut (nor any `encrypted_*`)."""


def truncate_input(
    value: JSON,
    head_chars: int,
    tail_chars: int,
    *,
    keep: frozenset[str] = frozenset(),
    items: int = 0,
) -> JSON:
    """A tool input with every long string value shown head and tail: the same shape, valid
    JSON, its keys and short values unchanged; the values of `keep` keys (and of
    `encrypted_*` keys, when `keep` is given) are never cut. With `items`, a list or object
    of more items shows its first and last ones around a marker (`Truncation.items`)."""
    if isinstance(value, str):
        if len(value) - head_chars - tail_chars > len(string_marker(len(value))):
            return _cut(value, head_chars, tail_chars, string_marker)
        return value
    if isinstance(value, Mapping):
        pairs = [
            (
                k,
                v
                if keep and (k in keep or k.startswith("encrypted"))
                else truncate_input(v, head_chars, tail_chars, keep=keep, items=items),
            )
            for k, v in _ends(list(value.items()), items)
        ]
        if items and len(value) > items:
            first = items - items // 3
            pairs.insert(first, (ITEMS_KEY, items_marker(len(value) - items)))
        return dict(pairs)
    if isinstance(value, list | tuple):
        shown_items: list[JSON] = [
            truncate_input(v, head_chars, tail_chars, keep=keep, items=items)
            for v in _ends(list(value), items)
        ]
        if items and len(value) > items:
            shown_items.insert(items - items // 3, items_marker(len(value) - items))
        return shown_items
    return value


V = TypeVar("V")

ITEMS_KEY = "[…]"
"""The key that names, in an object shown with its first and last keys, the keys left out."""


def items_marker(left_out: int) -> str:
    return f"[… {left_out:,} items truncated …]"


def _ends(values: list[V], items: int) -> list[V]:
    """The first and last of `values` a cut to `items` keeps (all of them for 0)."""
    if not items or len(values) <= items:
        return values
    last = items // 3
    return values[: items - last] + (values[len(values) - last :] if last else [])


def placeholder(block: Block) -> str:
    """What an image or document too large for the budget is shown as."""
    if isinstance(block, ImageBlock):
        if block.source_type == "url":
            return f"[image at {block.url} omitted from this request: too large for the budget]"
        size = len(block.data) * 3 // 4
        return f"[{block.media_type} image of {size:,} bytes omitted from this request: too large]"
    if isinstance(block, WireBlock):
        wire = block.to_wire()
        source = wire.get("source")
        detail = ""
        if isinstance(source, Mapping):
            media = source.get("media_type") or source.get("type")
            detail = f" ({media})" if isinstance(media, str) else ""
        title = wire.get("title")
        named = f" {title!r}" if isinstance(title, str) and title else ""
        return (
            f"[{block.type}{named}{detail} of {len(block.json):,} characters omitted from "
            "this request: too large]"
        )
    return f"[{type(block).__name__} omitted from this request: too large]"


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
        content[t.block_index] = _shown_block(message.content[t.block_index], t)
    for r in replacements:
        original = message.content[r.block_index]
        if r.text is None:
            content[r.block_index] = None
        elif isinstance(original, ToolResultBlock):
            content[r.block_index] = attrs.evolve(original, content=r.text)
        else:
            content[r.block_index] = TextBlock(r.text)
    return attrs.evolve(message, content=tuple(b for b in content if b is not None))


def _shown_block(block: Block, t: Truncation) -> Block:
    if isinstance(block, ToolResultBlock):
        text = truncate_text(
            block.text, t.head_chars, t.tail_chars, t.salient_chars, t.salient_rules
        )
        others = (
            []
            if isinstance(block.content, str)
            else [b for b in block.content if isinstance(b, ImageBlock | WireBlock)]
        )
        omitted = [
            b for b in others if not (isinstance(b, WireBlock) and b.type == "search_result")
        ]
        if omitted:
            kinds = sorted({"image" if isinstance(b, ImageBlock) else b.type for b in omitted})
            what = "image(s)" if kinds == ["image"] else f"{'/'.join(kinds)} block(s)"
            text = f"{text}\n[{len(omitted)} {what} of this tool output omitted: too large]"
            text = text.strip()
        return attrs.evolve(block, content=text)
    if isinstance(block, TextBlock):
        return TextBlock(
            truncate_message_text(
                block.text, t.head_chars, t.tail_chars, t.salient_chars, t.salient_rules
            )
        )
    if isinstance(block, ToolUseBlock):
        shown_input = truncate_input(dict(block.input), t.head_chars, t.tail_chars, items=t.items)
        assert isinstance(shown_input, dict)
        # The call keeps its id, name and any field not modelled here (its `caller`).
        return attrs.evolve(block, input=shown_input)
    if isinstance(block, WireBlock) and block.type in SERVER_TOOL_RESULT_TYPES:
        # A server tool's result stays in its place beside its call, its shape whole.
        wire = truncate_input(block.to_wire(), t.head_chars, t.tail_chars, keep=OPAQUE_KEYS)
        assert isinstance(wire, dict)
        return WireBlock.of(wire)
    return TextBlock(placeholder(block))


def plan_truncations(
    message: Message,
    limit: int,
    count: CountText,
    block_counts: Sequence[int],
    salient_chars: int = 0,
    salient_rules: int = 1,
) -> tuple[tuple[Truncation, ...], tuple[int, ...]]:
    """Truncations that bring the message's tool outputs to about `limit` tokens in all.

    `block_counts` are the message's per-block counts (`block_tokens`), so nothing already
    counted is counted again. Small outputs stay whole; the large ones share what is left
    (water-filling), each cut to head and tail, keeping up to `salient_chars` (at most a third
    of what is shown) of salient lines from the middle, chosen by `salient_rules`. Returns
    the truncations and the shown
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
    allowance = fair_shares([tokens for _, _, tokens in results], limit)
    truncations: list[Truncation] = []
    for (index, block, tokens), allowed in zip(results, allowance, strict=True):
        if tokens <= allowed:
            continue
        truncation, _ = _fit(
            index, block.text, tokens, allowed, count, (salient_chars, salient_rules)
        )
        truncations.append(truncation)
        # Counted as shown, with the note naming what was omitted besides the text.
        shown_counts[index] = block_tokens(_shown_block(block, truncation), count)
    return tuple(truncations), tuple(shown_counts)


def fair_shares(sizes: list[int], limit: int) -> list[int]:
    """Splits `limit` among `sizes`: the small ones get what they need, the large an equal
    share of what is left (at least 16 each)."""
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
    index: int, text: str, tokens: int, allowed: int, count: CountText, salient: tuple[int, int]
) -> tuple[Truncation, int]:
    salient_chars, rules = salient
    # Token density varies along a text, so shrink until the shown text counts within budget.
    keep = int(len(text) * allowed / max(tokens, 1))
    while True:
        kept = max(0, min(salient_chars, keep // 3))
        head = max(0, ((keep - kept) * 2) // 3)
        tail = max(0, keep - kept - head)
        shown_tokens = count(truncate_text(text, head, tail, kept, rules))
        if keep <= 0 or shown_tokens <= allowed:
            return Truncation(index, head, tail, kept, rules), shown_tokens
        keep = int(keep * 0.85)
