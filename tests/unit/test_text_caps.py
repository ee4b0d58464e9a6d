"""A cap of N characters keeps ASCII text as it always did and holds text in another script to
the tokens N characters of English and code cost (`abridged.domain.text_caps`), and the
facts ledger's entries follow it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from abridged.adapters.token_counters import TiktokenCounter
from abridged.domain.ledger import REQUEST_CHARS, extract
from abridged.domain.ledger_extraction import ERROR_CHARS
from abridged.domain.messages import Message, ToolResultBlock, ToolUseBlock
from abridged.domain.text_caps import CHARS_PER_TOKEN, capped, token_cap, within

COUNT = TiktokenCounter().count


def every_character_a_token(text: str) -> int:
    return len(text)


@given(st.text(alphabet=st.characters(max_codepoint=127)), st.integers(1, 2_000))
def test_ascii_text_keeps_its_character_cap_whatever_the_counter_says(
    text: str, chars: int
) -> None:
    assert capped(text, chars, every_character_a_token) == text[:chars]


@given(st.text(), st.integers(3, 600))
def test_any_text_keeps_a_head_within_its_cap_and_its_tokens(text: str, chars: int) -> None:
    head = capped(text, chars, COUNT)

    assert text.startswith(head)
    assert len(head) <= chars
    if not head.isascii():
        assert COUNT(head) <= token_cap(chars)
    assert within(text, chars, COUNT) == (head == text)


def test_a_japanese_prompt_keeps_the_tokens_an_english_one_of_its_cap_costs() -> None:
    japanese = "倉庫ごとの在庫数を合算してから上限を確認するように修正してください。" * 40
    english = "Sum the stock of every warehouse before checking the limit, please. " * 40
    assert COUNT(japanese[:REQUEST_CHARS]) > 3 * COUNT(english[:REQUEST_CHARS])

    entries = extract(list(enumerate([Message.user(japanese), Message.user(english)])), COUNT)
    [kept_japanese, kept_english] = [e.text for e in entries if e.kind == "request"]

    assert kept_english == english.strip()[:REQUEST_CHARS]
    assert japanese.startswith(kept_japanese)
    assert (
        COUNT(kept_japanese) <= REQUEST_CHARS // CHARS_PER_TOKEN < COUNT(japanese[:REQUEST_CHARS])
    )
    # Shrunk to fit, not to a fraction of the cap.
    assert COUNT(kept_japanese) > 0.8 * REQUEST_CHARS // CHARS_PER_TOKEN


def test_an_error_line_in_hindi_is_held_to_the_tokens_its_cap_costs_in_english() -> None:
    line = (
        "KeyError: 'राज्य का नाम' कॉलम तालिका बिक्री_सारांश में नहीं मिला; उपलब्ध कॉलम: राज्य, ज़िला, श्रेणी"
    )
    call = ToolUseBlock("t1", "python", {"code": "print(df['राज्य का नाम'])"})
    messages = [Message.assistant(call), Message.user(ToolResultBlock("t1", line, is_error=True))]

    [error] = [e.text for e in extract(list(enumerate(messages)), COUNT) if e.kind == "error"]

    assert len(line) <= ERROR_CHARS
    assert line.startswith(error)
    assert COUNT(error) <= ERROR_CHARS // CHARS_PER_TOKEN < COUNT(line)
