"""Caps on a text's length that stand for what it costs, whatever its script.

The facts ledger caps what it quotes in characters (`abridged.domain.ledger_extraction`: a
prompt's first 1,500, an error line's first 200, ...). Those numbers were tuned on English
and code, where a token holds three to five characters. In Japanese, Chinese, Korean, Hindi
or Thai a token holds about one character (Russian about two and a half, emoji less than
one), so the same caps cost three to four times the tokens. A cap of N characters therefore
keeps at most N characters *and*, for a text that is not all ASCII, at most the tokens N
characters of the tuned text cost: `N // CHARS_PER_TOKEN`.

ASCII text keeps the character caps alone, exactly as before: a token of it holds a
character at least, and the caps were tuned on it (so a ledger of ASCII text is the same,
byte for byte). A text with a few characters beyond ASCII (an em dash, a check mark) holds
more than `CHARS_PER_TOKEN` characters a token and is cut where it was.
"""

from __future__ import annotations

from abridged.domain.tokens import CountText

CHARS_PER_TOKEN = 3
"""The characters a token of the tuned text holds, at its dense end: agent transcripts
measured against cl100k hold 3.8 characters a token overall, 2.4 to 4.8 per transcript (see
`abridged.adapters.token_counters.CharRatioCounter`). A cap of N characters costs at most
N / 3 tokens of that text; a text in another script is held to the same."""


def token_cap(chars: int) -> int:
    """The tokens a cap of `chars` characters allows a text that is not all ASCII."""
    return chars // CHARS_PER_TOKEN


def capped(text: str, chars: int, count: CountText) -> str:
    """The head of `text` a cap of `chars` characters keeps: its first `chars` characters,
    and for a head that is not all ASCII, no more than `token_cap(chars)` tokens by `count`
    (the longest head found by shrinking that fits; `text` whole when it fits).

    Counts only a head that is not ASCII and has more UTF-8 bytes than the tokens allowed
    (a token holds one byte at least), at most a few times."""
    head = text[:chars]
    if head.isascii():
        return head
    allowed = token_cap(chars)
    if len(head.encode("utf-8")) <= allowed:
        return head
    tokens = count(head)
    if tokens <= allowed:
        return head
    # Density varies along a text: start where the head's average density says, then shrink.
    cut = len(head) * allowed // tokens
    while cut > 0 and count(head[:cut]) > allowed:
        cut = cut * 9 // 10
    return head[:cut]


def within(text: str, chars: int, count: CountText) -> bool:
    """Whether `text` is within a cap of `chars` characters (`capped` keeps it whole)."""
    return len(text) <= chars and len(capped(text, chars, count)) == len(text)
