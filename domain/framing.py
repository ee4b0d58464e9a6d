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

_LESS_THAN = "<\ufe64\uff1c"
"""`<` and the forms a reader takes for it: small (U+FE64) and full-width (U+FF1C)."""
_UNSEEN = r"[\s\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]*"
"""White space and the characters that show nothing (zero-width, joiners, direction marks,
soft hyphen): a tag written with them between its letters reads as the tag."""
_SLASH = "[/\u2215\u2044\uff0f]"
_DASH = "[-\u2010-\u2015\u2212\ufe58\ufe63\uff0d]"


def _letter(char: str) -> str:
    """A pattern for one character of a tag name: itself or its full-width form."""
    if char == "-":
        return _DASH
    return f"[{char}{chr(ord(char) + 0xFEE0)}]"


def _name(tag: str) -> str:
    return _UNSEEN.join(_letter(char) for char in tag)


_TAG = re.compile(
    f"[{_LESS_THAN}](?={_UNSEEN}{_SLASH}?{_UNSEEN}(?:"
    + "|".join(_name(tag) for tag in FRAME_TAGS)
    + r")(?!\w))",
    re.IGNORECASE,
)


def escape_framing(text: str) -> str:
    """`text` with the `<` of anything that reads as a frame tag (opening or closing, in any
    case, with spaces, with characters that show nothing between its letters, or in
    full-width forms) written `&lt;`; any other text unchanged."""
    if not any(char in text for char in _LESS_THAN):
        return text
    return _TAG.sub("&lt;", text)


_BACKTICKS = re.compile(r"`{3,}")


def fenced(text: str) -> str:
    """`text` between two fence lines of backticks longer than any run of backticks it holds,
    so no line of it closes the fence (Markdown's rule): inside, every line is quoted text."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"
