"""Derived text framed so that what it quotes cannot pose as the frame.

The summary chunks and the facts ledger quote text from the conversation, some of it written
by whoever wrote a fetched page or a file. Their frames (`<conversation-summary …>`, the
ledger's heading) say they are reference material; the quoted text must never close a frame
early or open one of its own, so the `<` that would start one of the frame's tags is written
`&lt;` wherever it appears in quoted text. Quoted text of several lines is `fenced`: its lines
stay as written (a prompt's layout is part of the task), and none of them can pose as a
heading, a section title or another entry, nor close the fence early.
"""

from __future__ import annotations

import re

__all__ = ["FRAME_TAGS", "escape_framing", "fenced"]

FRAME_TAGS = ("conversation-summary", "facts-ledger", "earlier-summary", "earlier-summaries")
"""The tags abridged frames derived text with (and that quoted text may not write)."""

_TAG = re.compile(r"<(?=\s*/?\s*(?:" + "|".join(FRAME_TAGS) + r")\b)", re.IGNORECASE)


def escape_framing(text: str) -> str:
    """`text` with the `<` of anything that reads as a frame tag (opening or closing, in any
    case, with spaces) written `&lt;`; any other text unchanged."""
    if "<" not in text:
        return text
    return _TAG.sub("&lt;", text)


_BACKTICKS = re.compile(r"`{3,}")


def fenced(text: str) -> str:
    """`text` between two fence lines of backticks longer than any run of backticks it holds,
    so no line of it closes the fence (Markdown's rule): inside, every line is quoted text."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"
