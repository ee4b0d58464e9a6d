"""A prompt's or a reply's sentences (`rule_words.sentences`) are `SENTENCE_END`'s, joined
again only where a word written short (`e.g.`, `sec.`, `etc.`) lets the sentence go on: no
character is lost or moved, and a text without such a word is cut exactly as before."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from abridged.domain.rule_words import SENTENCE_END, sentences

PIECES = st.sampled_from(
    [
        "e.g.",
        "i.e.",
        "sec.",
        "etc.",
        "Dr.",
        "no.",
        "vs.",
        " ",
        "  ",
        "\n",
        ".",
        "!",
        "?",
        "。",
        "Use",
        "tabs",
        "19",
        "x",
        "Ü",
        "\u2028",
        "\t",
    ]
)
TEXTS = st.lists(PIECES | st.text(max_size=4), max_size=40).map("".join)


def _pieces(text: str) -> list[tuple[str, str]]:
    """`SENTENCE_END.split(text)`'s parts, each with the separator after it."""
    pieces, start = [], 0
    for end in SENTENCE_END.finditer(text):
        pieces.append((text[start : end.start()], end.group(0)))
        start = end.end()
    return [*pieces, (text[start:], "")]


@given(TEXTS)
def test_sentences_join_the_split_parts_with_what_was_between_them(text: str) -> None:
    pieces = iter(_pieces(text))
    for part in sentences(text):
        joined, separator = next(pieces)
        while joined != part:
            assert len(joined) < len(part)
            following, after = next(pieces)
            joined, separator = joined + separator + following, after
    assert next(pieces, None) is None


@given(TEXTS.filter(lambda t: "." not in t))
def test_a_text_without_a_short_word_is_cut_as_before(text: str) -> None:
    assert sentences(text) == SENTENCE_END.split(text)
