"""The exact values a piece of prose gives whatever its language (issue 21): ids, dates and
times, versions, hashes, money, environment variables, hosts, emails (`values`), and the
numbers written after a word of a script other than Latin (`script_numbers`). The facts
ledger (`abridged.domain.ledger_extraction`) keeps them as `value` and `number` entries."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

SCRIPT_NUMBER = re.compile(
    r"([^\x00-\x7f])[ \t]?[:=\uff1a]?[ \t]?[0-9][0-9.,]*[0-9]%?(?![-/:.,]?[0-9])"
)
"""A number of two or more digits after a letter of another script (`порт 8080`, `金額3480`):
taken with that word (`script_numbers`). A number with no word before it (`2 files`) is not
one, nor a date's year (`2024-05-21`: the value is the date)."""
SCRIPT_WORD_CHARS = 12
_B = r"(?<![A-Za-z0-9_.@/$-])"
_E = r"(?![A-Za-z0-9_@/-]|\.[A-Za-z0-9])"
_FIRST = r"(?=[A-Za-z0-9._%+\-#$\u20ac\u00a3\u00a5\u20b9\u20a9\u20bd])"
"""Every character a value can start with: a look-ahead for it lets the other positions of
a text fail at once (a third of the time `VALUE` took over a megabyte of tool output)."""
VALUE = re.compile(
    _FIRST
    + r"(?:"
    + _B
    + r"(?:(?<![%+])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"  # email
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2})?(?:Z|[+-][0-9:]{4,5})?)?"
    r"|[0-9]{1,2}[/.][0-9]{1,2}[/.][0-9]{4}|[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?"  # date, time
    r"|(?=[0-9a-f]*[a-f])(?=[a-f]*[0-9])[0-9a-f]{7,64}"  # hash
    r"|[A-Z][A-Z0-9]{1,9}-[0-9]{2,}|#[0-9]{2,}"  # ticket, issue
    r"|(?![0-9]+[KMGT]?B\b)(?=[A-Z]*[0-9])(?=[0-9]*[A-Z])[A-Z0-9]{5,12}"  # code
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?:=[^\s`'\",;]*[^\s`'\",;.:!?)])?"  # env
    r"|\$\{?[A-Za-z_][A-Za-z0-9_]+\}?"
    r"|[0-9]{1,3}(?:\.[0-9]{1,3}){3}(?::[0-9]{2,5})?"  # IPv4
    r"|[A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*:[0-9]{2,5}"  # host:port
    r")" + _E + "|" + _B + r"[A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)+:[0-9]{2,5}(?=-[0-9])"
    r"|(?<![A-Za-z0-9_.@/$])(?:v[0-9]+(?:\.[0-9]+)+|[0-9]+\.[0-9]+\.[0-9]+)"
    r"(?:[-+][0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?"
    + _E  # version, a package's pin too
    + r"|[$\u20ac\u00a3\u00a5\u20b9\u20a9\u20bd]\s?[0-9](?:[0-9,.]*[0-9])?"  # money
    r"|(?<![\w.,])[0-9](?:[0-9,.]*[0-9])?\s?(?:USD|EUR|GBP|JPY|CNY|INR|KRW|RUB|AED|SAR|CHF)\b"
    r")"
)
"""An exact value written in prose, of a shape that says what it is whatever the language
around it: an email address, an ISO date or date-time, `21/05/2024`, a clock time, a version
(`v1.2`, `3.11.4`, a package's pin `tqdm-4.65.0`), a hex hash of 7 to 64 digits holding a
letter and a digit (a commit), a ticket or order id (`ORD-12345`, `#1234`), a code of 5 to 12
capitals and digits holding both (`JG7FMM`, not a size like `330KB`), an environment variable
or constant (`FOO_BAR=1`, `$HOME`), an IPv4 address or `host:port` (a file's line range
`library.py:58-59` too), and a money amount with its sign or ISO code. Its edges are ASCII: a
value inside a sentence of a script without spaces (`注文ORD-12345を`) is found, one glued to
Latin letters or digits is part of a longer word and is not. A number alone (`2 files`, a
year) is not a value."""
VALUE_CHARS = 120
TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}.*|[0-9]{1,2}[/.][0-9]{1,2}[/.][0-9]{4}|[0-9]{1,2}:[0-9]{2}.*"
)
"""A value that is a date or a time."""
LINE_HEAD = re.compile(r"[\s\[(]*")


def script_numbers(text: str) -> list[str]:
    """The numbers `SCRIPT_NUMBER` finds, each with the word before it: the letters and marks
    (a Devanagari vowel sign is a mark) of any script but Latin's, its last
    `SCRIPT_WORD_CHARS` at most, since a script without spaces runs words together, and two
    at least (`в 2024`, like `in 2024`, is prose)."""
    found: list[str] = []
    for match in SCRIPT_NUMBER.finditer(text):
        start = match.start()
        while (
            start > 0
            and match.start() - start < SCRIPT_WORD_CHARS - 1
            and not text[start - 1].isascii()
            and unicodedata.category(text[start - 1])[0] in "LM"
        ):
            start -= 1
        letter = unicodedata.category(text[match.start()])[0] in "LM"
        if letter and match.start() > start and unicodedata.category(text[start])[0] in "LM":
            found.append(text[start : match.end()])
    return found


def values(text: str) -> Iterable[str]:
    """The values `VALUE` finds in `text`, but a date or time that starts a line: a log's
    timestamps (a pasted log has one on every line) are not facts anyone stated."""
    for match in VALUE.finditer(text):
        value = match.group(0)
        if TIMESTAMP.fullmatch(value) and LINE_HEAD.fullmatch(
            text, _line_start(text, match.start()), match.start()
        ):
            continue
        yield value


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1
