"""Derived text framed so that what it quotes cannot pose as the frame.

The summary chunks and the facts ledger quote text from the conversation, some of it written
by whoever wrote a fetched page or a file. Their frames (`<conversation-summary …>`, the
ledger's heading) say they are reference material; the quoted text must never close a frame
early or open one of its own, so the `<` that would start one of the frame's tags is written
`&lt;` wherever it appears in quoted text.
"""

from __future__ import annotations

import re

__all__ = ["FRAME_TAGS", "escape_framing"]

FRAME_TAGS = ("conversation-summary", "facts-ledger", "earlier-summary", "earlier-summaries")
"""The tags abridged frames derived text with (and that quoted text may not write)."""

_TAG = re.compile(r"<(?=\s*/?\s*(?:" + "|".join(FRAME_TAGS) + r")\b)", re.IGNORECASE)


def escape_framing(text: str) -> str:
    """`text` with the `<` of anything that reads as a frame tag (opening or closing, in any
    case, with spaces) written `&lt;`; any other text unchanged."""
    if "<" not in text:
        return text
    return _TAG.sub("&lt;", text)
