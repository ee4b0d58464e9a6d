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

import functools
import re
import unicodedata

__all__ = ["FRAME_TAGS", "escape_framing", "fenced"]

FRAME_TAGS = ("conversation-summary", "facts-ledger", "earlier-summary", "earlier-summaries")
"""The tags abridged frames derived text with (and that quoted text may not write)."""

_LESS_THAN = "<\ufe64\uff1c"
"""`<` and the forms a reader takes for it: small (U+FE64) and full-width (U+FF1C)."""
_UNSEEN = r"[\s\u00ad\u0300-\u036f\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]*"
"""White space, the characters that show nothing (zero-width, joiners, direction marks, soft
hyphen) and combining marks (an accent over a letter leaves the letter): a tag written with
them between its letters reads as the tag."""
_LOOKALIKES = dict(
    zip(
        "\u0430\u0435\u043e\u0441\u0440\u0443\u0445\u0456\u0455\u0501\u04bb\u04cf\u0475\u0131"
        "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0423\u0425\u0406\u0405"
        "\u03bf\u03b1\u03bd\u03b9\u03c4\u03c5\u039f\u0391\u0395\u0399\u039c\u039d\u03a4\u03a5",
        "aeocpyxisdhlviABEKMHOPCTYXISoavituOAEIMNTY",
        strict=True,
    )
)
"""Cyrillic and Greek letters drawn as Latin ones: `</сonversation-summary>` with a Cyrillic
`с` reads as the tag."""
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
    case, with spaces, with characters that show nothing or combining marks between its
    letters, in full-width or mathematical forms, with Cyrillic or Greek letters drawn as
    Latin ones) written `&lt;`; any other text unchanged."""
    if not any(char in text for char in _LESS_THAN):
        return text
    # The tag is looked for in a copy whose every character is the one it is drawn as
    # (lookalike letters, mathematical and full-width forms), one for one, so that the
    # places found are the original's.
    folded = "".join(map(_drawn_as, text))
    starts = [match.start() for match in _TAG.finditer(folded)]
    if not starts:
        return text
    parts, end = [], 0
    for start in starts:
        parts += [text[end:start], "&lt;"]
        end = start + 1
    return "".join([*parts, text[end:]])


@functools.cache
def _drawn_as(char: str) -> str:
    """The Latin character `char` is drawn as, when it is one; else `char`."""
    if char.isascii():
        return char
    if char in _LOOKALIKES:
        return _LOOKALIKES[char]
    normal = unicodedata.normalize("NFKC", char)
    return normal if len(normal) == 1 and normal.isascii() and normal.isalpha() else char


_BACKTICKS = re.compile(r"`{3,}")


def fenced(text: str) -> str:
    """`text` between two fence lines of backticks longer than any run of backticks it holds,
    so no line of it closes the fence (Markdown's rule): inside, every line is quoted text."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"
