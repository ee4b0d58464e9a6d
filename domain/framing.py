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
from collections.abc import Sequence

__all__ = ["FRAME_TAGS", "LINE_BREAKS", "escape_framing", "escape_tags", "fenced"]

FRAME_TAGS = ("conversation-summary", "facts-ledger", "earlier-summary", "earlier-summaries")
"""The tags abridged frames derived text with (and that quoted text may not write)."""

LINE_BREAKS = re.compile(r"\r\n?|[\n\v\f\x1c-\x1e\x85\u2028\u2029]")
"""What ends a line for some reader: Markdown's `\\n`, `\\r\\n` and `\\r`, and the form feed,
vertical tab, separators and Unicode line and paragraph separators Python's `splitlines`
and a model's tokenizer read as one."""

_LESS_THAN = "<\ufe64\uff1c\u2039\u2329\u3008\u27e8\u276c\u276e\u29fc\u02c2\u1438"
"""`<` and the forms a reader takes for it: small (U+FE64) and full-width (U+FF1C), the
angle quotation marks and brackets (`‹`, `〈`, `⟨`, `❬`, `❮`, `⧼`), the modifier arrowhead
`˂` and the syllabic `ᐸ`."""
_SLASHES = "\u2215\u2044\uff0f\u29f8\u2571\u27cb"
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
_BLANKS = "\u115f\u1160\u3164\uffa0\u2800"
"""Letters and symbols drawn as nothing but room: the Hangul fillers, the blank braille
pattern."""
_UNSEEN = r"[\s\u200b]*+"
"""White space and (in the folded copy `escape_tags` searches) every character that shows
nothing: a tag written with them between its letters reads as the tag. Possessive: it never
gives back what it took, so a `<` followed by a long run of them is read once, not once per
way of splitting the run."""
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


def _name(tag: str) -> str:
    """A pattern for a tag's name: its letters with anything unseen between them, and for a
    dash, a dash, an underscore, or nothing (`conversation_summary`, `conversation summary`)."""
    parts = [
        "(?:[-_]" + _UNSEEN + ")?" if char == "-" else re.escape(char) + _UNSEEN for char in tag
    ]
    return "".join(parts).removesuffix(_UNSEEN)


@functools.cache
def _tag_pattern(tags: tuple[str, ...]) -> re.Pattern[str]:
    names = "|".join(_name(tag) for tag in tags)
    return re.compile(f"<(?={_UNSEEN}(?:/{_UNSEEN})?(?:{names})(?!\\w))", re.IGNORECASE)


def escape_tags(text: str, tags: Sequence[str]) -> str:
    """`text` with the `<` of anything that reads as one of `tags` (opening or closing, in
    any case, with spaces, with characters that show nothing or combining marks between its
    letters, in full-width or mathematical forms, with Cyrillic or Greek letters drawn as
    Latin ones, with another dash, `<` or `/` drawn alike) written `&lt;`; any other text
    unchanged. Linear in the text's length."""
    if not any(char in text for char in _LESS_THAN):
        return text
    # The tag is looked for in a copy whose every character is the one it is drawn as
    # (lookalike letters, mathematical and full-width forms, what shows nothing), one for
    # one, so that the places found are the original's.
    folded = "".join(map(_drawn_as, text))
    starts = [match.start() for match in _tag_pattern(tuple(tags)).finditer(folded)]
    if not starts:
        return text
    parts, end = [], 0
    for start in starts:
        parts += [text[end:start], "&lt;"]
        end = start + 1
    return "".join([*parts, text[end:]])


def escape_framing(text: str) -> str:
    """`text` with the `<` of anything that reads as a frame tag (`FRAME_TAGS`) written
    `&lt;` (`escape_tags`); any other text unchanged."""
    return escape_tags(text, FRAME_TAGS)


@functools.cache
def _drawn_as(char: str) -> str:
    """The character `char` is drawn as, when the tag's search cares (a Latin letter, `<`,
    `/`, `-`, or nothing at all: U+200B); else `char`."""
    if char.isascii():
        return char
    if char in _LOOKALIKES:
        return _LOOKALIKES[char]
    if char in _LESS_THAN:
        return "<"
    if char in _SLASHES:
        return "/"
    if char in _DASHES:
        return "-"
    if char in _BLANKS or unicodedata.category(char) in ("Cf", "Mn", "Me"):
        # Format characters (zero-width, joiners, direction marks and isolates, the soft
        # hyphen, tag characters), and marks drawn over the letter before them.
        return "\u200b"
    # Full-width and mathematical letters; an accented letter, which reads as the letter
    # with a mark over it (`ó` as `o` and U+0301).
    normal = unicodedata.normalize("NFKD", char)
    base = normal[:1]
    if base.isascii() and base.isalpha() and all(unicodedata.combining(c) for c in normal[1:]):
        return base
    return char


_BACKTICKS = re.compile(r"`{3,}")


def fenced(text: str) -> str:
    """`text` between two fence lines of backticks longer than any run of backticks it holds,
    so no line of it closes the fence (Markdown's rule): inside, every line is quoted text."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"
