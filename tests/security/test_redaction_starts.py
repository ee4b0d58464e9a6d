"""A pattern with `starts` redacts a long text exactly as its expression alone does (tried at
each position, as `re.sub` tries it): on generated texts of its starts in any case, secrets
and odd unicode, on the redaction corpus, and on the shared transcripts' long strings."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.domain import secret_pattern
from abridged.domain.redaction import DEFAULT_PATTERNS, redact_text
from abridged.domain.secret_pattern import SecretPattern, aligned_lower, placeholder
from tests.conftest import TRANSCRIPTS
from tests.properties.strategies import ODD
from tests.security.redaction_corpus import LEAKS, ORDINARY

STARTING = tuple(p for p in DEFAULT_PATTERNS if p.starts)


def by_expression(pattern: SecretPattern, text: str) -> str:
    """What `pattern.redact` gave before `starts`: its expression tried at each position."""
    mark = placeholder(pattern.kind)
    if pattern.group == 0:
        return pattern.compiled.sub(mark, text)

    def replace(match: re.Match[str]) -> str:
        start, end = match.span(pattern.group)
        if start < 0:
            return match.group(0)
        offset = match.start()
        return match.group(0)[: start - offset] + mark + match.group(0)[end - offset :]

    return pattern.compiled.sub(replace, text)


def redacted_by_expressions(text: str, patterns: Sequence[SecretPattern]) -> str:
    lowered = text.lower()
    for pattern in patterns:
        if pattern.may_match(lowered):
            text = by_expression(pattern, text)
    return text


@contextmanager
def every_length_searched() -> Iterator[None]:
    """Short texts searched from their starts too, as long ones are."""
    kept = secret_pattern.STARTS_FROM
    secret_pattern.STARTS_FROM = 1
    try:
        yield
    finally:
        secret_pattern.STARTS_FROM = kept


def test_the_patterns_that_cost_most_on_long_outputs_have_starts() -> None:
    kinds = {p.kind for p in STARTING}
    assert {"secret", "password", "bearer-token", "stripe-key", "cookie"} <= kinds
    assert len(STARTING) >= 15


def test_the_characters_read_as_an_ascii_letter_without_lowercasing_to_it_are_listed() -> None:
    letter = re.compile("(?i)[a-z]")
    found = set()
    for code in range(128, sys.maxunicode + 1):
        char = chr(code)
        if 0xD800 <= code <= 0xDFFF or not letter.fullmatch(char):
            continue
        lowered = char.lower()
        if not (len(lowered) == 1 and lowered.isascii()):
            found.add(char)
    assert found == set(secret_pattern._FOLDS_ELSEWHERE)


@pytest.mark.parametrize(
    ("text", "aligned"),
    [
        ("Token=ABC", "token=abc"),
        ("Ключ TOKEN=é", "ключ token=é"),
        ("\u212aEY=1", "key=1"),  # the Kelvin sign lowercases to `k`
        ("ſecret=1", None),  # read as `s`, lowercases to itself
        ("ıd İd", None),
    ],
)
def test_aligned_lower(text: str, aligned: str | None) -> None:
    assert aligned_lower(text) == aligned


def test_invalid_starts_are_refused() -> None:
    for starts in (("",), ("Token",), ("clé",)):
        with pytest.raises(ValueError, match="starts"):
            SecretPattern("secret", r"x", starts=starts)


STARTS = sorted({start for p in STARTING for start in p.starts})
PIECES = st.sampled_from(
    [
        *STARTS,
        *("_", "-", ".", "=", ": ", " ", "\n", "\t", '"', "'", '\\"', "\\n", "%3D", "%20"),
        *("hunter2Secret!", "abcdefghijklmnop1234567890", "live_", "test_", "registry "),
        *("data", "_key", "key_data", "api-key", "credentials", "phrase", "wd", "-in"),
        *("login ", " -p", " -a ", " -w ", " pass:", "is ", "was ", "auth", "=YWxhZGRpbjpv"),
        *("[redacted secret]", "ſ", "ı", "İ", "\u212a", "é", "日本", "\U0001f600", "\u200b"),
    ]
)


CASES: tuple[Callable[[str], str], ...] = (str, str.upper, str.title, str.swapcase)


def cased(pieces: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(pieces, st.sampled_from(CASES)).map(lambda pair: pair[1](pair[0]))


NAME_LIST = (
    *STARTS,
    # Written out, not read from the patterns: a start left out must still be drawn.
    *("secret", "token", "creds", "private_key", "access-key", "master_key", "pwd"),
    *("signing_key", "encryption-key", "shared_key", "subscription-key", "client_key"),
    *("app_key", "auth_key", "session_key", "auth", "cookie", "login", "basic"),
    *("key_data", "keydata", "api_key", "AccountKey", "client-key-data", "credentials"),
    *("password", "passwd", "passphrase", "pw", "DB_PASS", "set-cookie", "authorization"),
    *("docker login -u x -p", "helm registry login r -p ", "mysql -p", "sshpass -p "),
    *("login x password", "redis-cli -a", "ldapsearch -w", "-passin pass:", "Bearer"),
    *("sk_live_", "rk_test_", "sk_prod_"),
)
NAMES = st.sampled_from(NAME_LIST)
BEFORE = ["", "DB_", "my ", "\n", '"', "x-", "--", " ", "(", "'"]
BETWEEN = ["=", ": ", '": "', '\\": \\"', "%3D", " is ", " ", ":", '="', "\t"]
VALUES = ["hunter2Secret!", "abcdefghijklmnop1234567890", "YWxhZGRpbjpvcGVu==", "a b"]
NAMED = st.tuples(
    st.sampled_from(BEFORE), cased(NAMES), st.sampled_from(BETWEEN), st.sampled_from(VALUES)
).map("".join)
"""A name, a separator and a value: what the patterns look for, in any case."""
CASED = cased(PIECES)
TEXTS = st.lists(
    st.one_of(NAMED, NAMED, NAMED, NAMED, CASED, st.sampled_from(ODD), st.text(max_size=6)),
    max_size=40,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(TEXTS)
def test_each_pattern_redacts_from_its_starts_what_its_expression_finds(text: str) -> None:
    with every_length_searched():
        for pattern in STARTING:
            assert pattern.redact(text) == by_expression(pattern, text), pattern


@settings(max_examples=100, deadline=None)
@given(TEXTS)
def test_all_patterns_together_redact_as_their_expressions(text: str) -> None:
    with every_length_searched():
        assert redact_text(text, DEFAULT_PATTERNS) == redacted_by_expressions(
            text, DEFAULT_PATTERNS
        )


@pytest.mark.parametrize("separator", ["\n", " "])
def test_every_name_between_and_value_is_redacted_as_before(separator: str) -> None:
    texts = [
        before + case(name) + between + value
        for name in NAME_LIST
        for case in CASES[:2]
        for before in ("", "DB_", " ", '"')
        for between in BETWEEN
        for value in VALUES[:2]
    ]
    for start in range(0, len(texts), 200):
        joined = separator.join(texts[start : start + 200])
        for pattern in STARTING:
            assert pattern.redact(joined) == by_expression(pattern, joined), pattern


def test_the_corpus_joined_into_long_texts_is_redacted_as_before() -> None:
    texts = [leak.text for leak in LEAKS] + list(ORDINARY)
    for separator in ("\n", " ", "\\n", ""):
        joined = separator.join(texts)
        assert len(joined) >= secret_pattern.STARTS_FROM
        assert redact_text(joined, DEFAULT_PATTERNS) == redacted_by_expressions(
            joined, DEFAULT_PATTERNS
        )


def _long_strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        if len(value) >= secret_pattern.STARTS_FROM:
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _long_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _long_strings(item)


def test_the_shared_transcripts_long_strings_are_redacted_as_before() -> None:
    files = sorted(TRANSCRIPTS.glob("*.jsonl"))
    if not files:
        pytest.skip("the shared transcripts are not here (CI requires them)")
    checked = 0
    for path in files:
        budget = 150_000  # characters a transcript, its first long strings
        for line in path.read_text(encoding="utf-8").splitlines():
            if budget <= 0:
                break
            for text in _long_strings(json.loads(line) if line.strip() else None):
                budget -= len(text)
                checked += 1
                assert redact_text(text, DEFAULT_PATTERNS) == redacted_by_expressions(
                    text, DEFAULT_PATTERNS
                ), path.name
    assert checked > 100
