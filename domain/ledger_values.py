"""The exact values a piece of prose gives whatever its language (issue 21): ids, dates and
times, versions, hashes, money, environment variables, hosts, emails (`values`); numbers with
the Latin word before them and their unit or what they count (`NUMBER`), and the numbers
written after a word of a script other than Latin (`script_numbers`). The facts ledger
(`abridged.domain.ledger_extraction`) keeps them as `value` and `number` entries."""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable, Sequence

UNIT = (
    r"(?:[KMGTP]i?B|[kKMG]?Hz|[mun]s|µs|secs?|seconds?|s|mins?|minutes?|hrs?|hours?|h|days?"
    r"|px|rpm|rps|qps|req/s|tokens|" + r"(?:[kKMB]|bn|mn|Mio|Mrd|x|×))(?![\w/%])"
)
"""A unit written after a number: sizes, frequencies, durations, rates, pixels, tokens; or
its magnitude or a factor glued to it (`412k`, `2.5M`, `1.5x`), which change what it says."""
MAGNITUDE = r"(?:[kKMBm]|bn|mn|Mio|Mrd)?"
"""A magnitude glued to an amount (`€412k`, `$1.2M`, `£5m`, `2.5 Mrd`): part of the value,
which without it would read a thousand or a million times smaller."""
_NOT_COUNTED = (
    r"(?:and|or|nor|but|to|of|in|on|at|by|for|with|from|into|than|then|as|so|if|is|are|was"
    r"|were|be|the|this|that|these|those|it|its|per|via|vs|times|more|less|out|still|instead"
    r"|again|already|now|also|too|only|just|yet|not|all|both|each|when|where|which|while"
    r"|after|before|because|since|until|has|have|had|will|would|should|can|could|may|might"
    r"|must|does|did|seems|looks|you|they|there|here)(?![\w-])"
)
"""Words after a number that are not what it counts: `2 of them`, `3 times`, `10 more`,
`line 163 still`, `line 25 instead`."""
_COUNTED = r"[ \t](?!" + _NOT_COUNTED + r")[a-z][a-z-]{2,30}(?![\w/-])"
"""What a number counts, written after it: a lowercase word (`rows`, `failures`, `files`)."""
NUMBER = re.compile(
    r"\b[A-Za-z_][\w-]{2,64}[ \t]?[:=]?[ \t]\d[\d.,]*\d%?(?:[ \t]?" + UNIT + "|" + _COUNTED + ")?"
)
"""A number of two or more digits with the Latin word before it, and its unit or what it
counts when one follows: `port 8080`, `timeout: 30`, `was 245 ms`, `deleted 7455 rows`. The
word is bounded: every word of a run like `a-a-a-…` starts a try, which would otherwise read
the rest of the run (quadratic: 16,000 characters took 10 s)."""
DOTTED = re.compile(r"\d+(?:\.\d+){2,}")
"""Digits of three parts or more: a section (`19.2.3`), a version, an address, a date."""


SCRIPT_NUMBER = re.compile(
    r"([^\x00-\x7f])[ \t]?[:=\uff1a]?[ \t]?[0-9][0-9.,]*[0-9]%?(?![-/:.,]?[0-9])"
)
"""A number of two or more digits after a letter of another script (`порт 8080`, `金額3480`):
taken with that word (`script_numbers`). A number with no word before it (`2 files`) is not
one, nor a date's year (`2024-05-21`: the value is the date)."""
SCRIPT_WORD_CHARS = 12
_B = r"(?<![A-Za-z0-9_.@/$-])"
_E = r"(?![A-Za-z0-9_@/-]|\.[A-Za-z0-9])"
_LATIN = "\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"
"""The letters of the Latin alphabets beyond ASCII (`í`, `ü`, `ø`, `ł`): an email's local
part may hold them (`raúl.garcía@example.it`); `×` and `÷` are not letters."""
_ISO = "USD|EUR|GBP|JPY|CNY|INR|KRW|RUB|AED|SAR|CHF"
"""The currencies whose code marks an amount (`120 USD`, `EUR 1.299,00`)."""
_GROUPED = r"[0-9]{1,3}(?:[ \u00a0\u202f][0-9]{3}){1,6}(?:[.,][0-9]{1,2})?"
"""An amount whose thousands a space groups, as French and Swiss texts write it
(`21 907,44`): taken whole before a currency's sign or code."""
_EXTENSIONS = (
    "py|pyi|pyx|ipynb|js|jsx|mjs|cjs|ts|tsx|mts|cts|go|rs|java|kt|kts|scala|groovy|rb|php"
    "|c|h|cc|cpp|cxx|hpp|hh|cs|fs|swift|m|mm|dart|lua|pl|pm|r|R|jl|ex|exs|erl|hrl|hs|ml|mli"
    "|clj|cljs|elm|vue|svelte|sh|bash|zsh|ps1|sql|proto|graphql|tf|hcl|nix|zig|sol|md|mdx"
    "|rst|txt|tex|json|jsonl|yaml|yml|toml|ini|cfg|conf|env|xml|html|htm|css|scss|sass|less"
    "|csv|tsv|log|lock|gradle|cmake|mk|bzl"
)
"""The extensions of the files an agent cites by line: source, configuration, documents."""
_FILE_LINE = r"[A-Za-z0-9_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*\.(?:" + _EXTENSIONS + r"):[0-9]{1,6}"
"""A file's line (`order_2.py:632`, `test_api.py:7`, `README.md:12`): a name with the
extension of a source, configuration or document file, then its line (a host's name holds
no `_`, its last label is seldom one of these, its port has two to five digits)."""
FILE_LINE_END = re.compile(r"(?<![A-Za-z0-9_.-])" + _FILE_LINE + r"$")
"""A value that ends with a file's line: the file named where the agent looked."""
_FILE_LINE_TAIL = re.compile(
    r"\.(?:" + _EXTENSIONS + r"):[0-9]{1,6}"
    r"(?:(?=-[0-9])|(?![A-Za-z0-9_@/-]|\.[A-Za-z0-9]))"
)
"""A file's line from its extension on: it starts with a `.`, which the search skips to,
where `_FILE_LINE` in `VALUE` was tried at every word (22 ms more a megabyte)."""
_NAME_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_NOT_BEFORE_A_NAME = frozenset(_NAME_CHARACTERS + "@/$")
_NAME_FIRST = frozenset(_NAME_CHARACTERS) - frozenset(".-")


def _word_start(text: str, end: int) -> int:
    """Where the run of name characters (`_NAME_CHARACTERS`) that ends at `end` starts, read
    at most 256 back (a longer run starts before that)."""
    window = text[max(0, end - 256) : end]
    return end - (len(window) - len(window.rstrip(_NAME_CHARACTERS)))


def _file_name_before(text: str, end: int) -> int | None:
    """Where the file's name that ends at `end` starts (its run of name characters, at most
    255), or `None` when it has none, starts with `.` or `-`, or is glued to a folder, an
    `@`, a `$` or a longer run (a `GLUED` word's, read there)."""
    start = _word_start(text, end)
    if start == end or end - start > 255 or text[start] not in _NAME_FIRST:
        return None
    if start > 0 and text[start - 1] in _NOT_BEFORE_A_NAME:
        return None
    return start


_FIRST = r"(?=[A-Za-z0-9._%+\-#$\u20ac\u00a3\u00a5\u20b9\u20a9\u20bd" + _LATIN + "])"
"""Every character a value can start with: a look-ahead for it lets the other positions of
a text fail at once (a third of the time `VALUE` took over a megabyte of tool output)."""
VALUE = re.compile(
    _FIRST
    + r"(?:"
    + _B
    + r"(?:(?<![%+"
    + _LATIN
    + r"])[A-Za-z0-9._%+"
    + _LATIN
    + r"-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"  # email
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2})?(?:Z|[+-][0-9:]{4,5})?)?"
    r"|[0-9]{1,2}[/.][0-9]{1,2}[/.](?:[0-9]{4}|[0-9]{2})|[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?"
    r"|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"  # UUID
    r"|(?=[0-9a-f]*[a-f])(?=[a-f]*[0-9])[0-9a-f]{7,64}"  # hash
    r"|[A-Z][A-Z0-9]{1,9}(?:-[0-9]{2,}){1,4}|[A-Z](?:-[0-9]{2,}){2,4}|#[0-9]{2,}"  # ticket
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
    + MAGNITUDE
    + r"(?![A-Za-z0-9])"
    r"|(?<![\w.,'])(?:"
    + _GROUPED
    + r"|[0-9](?:[0-9,.']*[0-9])?)"
    + MAGNITUDE
    + r"(?:\s?(?:"
    + _ISO
    + r")\b|[ \u00a0\u202f]?[$\u20ac\u00a3\u00a5\u20b9\u20a9\u20bd])"
    r"|\b(?:" + _ISO + r")[ \u00a0]?[0-9](?:[0-9,.']*[0-9])?" + MAGNITUDE + r"(?![\w.,'])"
    r")"
)
"""An exact value written in prose, of a shape that says what it is whatever the language
around it: an email address, an ISO date or date-time, `21/05/2024` or `21.05.24`, a clock
time, a version
(`v1.2`, `3.11.4`, a package's pin `tqdm-4.65.0`), a UUID (a request's, a trace's, a
resource's id), a hex hash of 7 to 64 digits holding a
letter and a digit (a commit), a ticket or order id (`ORD-12345`, `#1234`), a code of 5 to 12
capitals and digits holding both (`JG7FMM`, not a size like `330KB`), an environment variable
or constant (`FOO_BAR=1`, `$HOME`), an IPv4 address or `host:port`, a file's line
(`order_2.py:632`, the start of a range `library.py:58-59`: the ledger keeps it as a
name), and a money amount with its sign or ISO code, before or after it
(`$1,299.00`, `12,50 €`, `21 907,44 €`, `120 USD`, `CHF 1'250.00`), with its magnitude
(`€412k`, `$1.2M`, `2.5M EUR`). A ticket's or an
invoice's id may have several parts (`INV-2026-0042`, `F-2026-118`). Its edges are ASCII: a
value inside a sentence of a script without spaces (`注文ORD-12345を`) is found, one glued to
Latin letters or digits is part of a longer word and is not. A number alone (`2 files`, a
year) is not a value."""
_MONTHS_CAPITAL = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
    "|Januar|Februar|März|Juni|Juli|Oktober|Dezember"
    "|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec"
)
"""The months English and German write before the day (`April 19, 2026`, `März 3`)."""
_MONTHS_ANY = (
    _MONTHS_CAPITAL
    + "|janvier|février|mars|avril|mai|juin|juillet|août|septembre|octobre|novembre|décembre"
    "|enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|setiembre|octubre"
    "|noviembre|diciembre|janeiro|fevereiro|março|maio|junho|julho|setembro|outubro|dezembro"
    "|gennaio|febbraio|aprile|maggio|giugno|luglio|settembre|ottobre|dicembre"
    "|januari|februari|maart|mei|augustus"
)
"""The months the languages of `abridged.domain.rule_words` with a Latin alphabet write
after the day (`19 April 2026`, `19. April 2026`, `19 avril 2026`, `19 de abril de 2026`)."""
WRITTEN_DATE = re.compile(
    r"(?=[0-9JFMASOND])(?:(?<![\w.])[0-3]?[0-9](?:st|nd|rd|th|er|º|\.)? (?:de )?(?i:"
    + _MONTHS_ANY
    + r")\.?"
    r"(?:,? (?:de )?[12][0-9]{3})?(?!\w)"
    r"|(?<![\w.])(?:" + _MONTHS_CAPITAL + r")\.? (?:[0-3]?[0-9](?:st|nd|rd|th)?(?:,? [12][0-9]{3})?"
    r"|[12][0-9]{3})(?![\w.,]?[0-9]))"
)
"""A date written with its month's name, with its year when it has one (`April 19, 2026`,
`Apr 19`, `March 2026`, `19 April 2026`, `3. März 2026`, `19 de abril de 2026`): the year
is what a `number` entry (`April 19`) leaves out, so the ledger lists the date instead."""
CLOCK_AFTER = re.compile(r" [0-9]{1,2}:[0-9]{2}")
VALUE_CHARS = 120
TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}.*|[0-9]{1,2}[/.][0-9]{1,2}[/.][0-9]{2,4}|[0-9]{1,2}:[0-9]{2}.*"
)
"""A value that is a date or a time."""
_MODIFIER = r"(?:Ctrl|Control|Cmd|Command|Alt|Option|Opt|Shift|Meta|Super|Win|Fn)"
_SHAPE_START = re.compile(
    r"[GPDHOCASMWF+(](?<![\w][GPDHOCASMWF])(?:(?<=G)ET /|(?<=P)(?:OST|UT|ATCH) /"
    r"|(?<=D)ELETE /|(?<=H)EAD /|(?<=O)PTIONS /|(?<=[PM])R ?[#!]?[0-9]"
    r"|(?<=[CAOSMWF])(?:trl|ontrol|md|ommand|lt|ption|pt|hift|eta|uper|in|n)\+"
    r"|(?<=\+)(?<![\w+]\+)[0-9]|(?<=\()(?<![\w)]\()[0-9]{3}\))"
)
"""Where a value `SHAPED` reads may start: one class of first characters, which the search
skips to (the shapes tried at every position took 100 ms a megabyte, this 2 ms)."""
SHAPED = re.compile(
    r"(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) /[^\s`'\"<>()\[\]{},;]*"  # endpoint
    r"|\+[0-9]{1,3}(?:[ .-]?\(?[0-9]{1,5}\)?){2,6}(?![0-9])"  # a phone, +…
    r"|\([0-9]{3}\) ?[0-9]{3}-[0-9]{4}(?![0-9])"  # … or (555) 123-4567
    r"|" + _MODIFIER + r"(?:\+" + _MODIFIER + r")*\+(?:F[0-9]{1,2}|[A-Z][a-z]+|[A-Z0-9]"
    r"|[`\[\]/\\,.;=-])(?![A-Za-z0-9])"  # a key combination
    r"|(?:PR|MR) ?[#!]?[0-9]+\b"  # a pull or merge request
)
"""Values of shapes an agent writes in prose without backticks: an endpoint with its method
(`POST /v2/orders/{id}/refund`), a phone number (`+33 6 12 34 56 78`, `(555) 123-4567`), a
key combination (`Ctrl+Alt+T`, `Cmd+Shift+P`), a pull or merge request (`PR 4821`,
`MR !377`); read where `_SHAPE_START` finds one may start."""
_OPERATOR = re.compile(r"(?:>=|<=|~=|==|!=|~>)")
CONSTRAINT = re.compile(
    r"(?:[A-Za-z][\w.-]*)?(?:>=|<=|~=|==|!=|~>) ?[0-9][\w.*]*"
    r"(?:, ?(?:<|>|<=|>=|!=|==) ?[0-9][\w.*]*)*"
)
"""A version constraint, with the package's name when it has one (`elasticsearch-py>=8.12,<9`,
`>=3.11`), read from the name before its first operator."""
_DOTTED_PART = re.compile(r"\.[a-z][a-z0-9_]*\.[a-z]")
"""Where a dotted key may be: a lowercase part between two `.`."""
KEY = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*){2,}")
"""A lowercase dotted key of three parts or more (`indices.recovery.max_bytes_per_sec`); not
a file's or a host's name, which ends in an extension or a domain. Two parts are not enough:
most are an attribute of code (`self.library_service`, `mock.side_effect`)."""
_PHONE_DIGITS = 8
"""A phone number has at least this many digits (`+1 555 0100` is one, `+12 34` is not)."""
_EXTENSION_SET = frozenset(_EXTENSIONS.split("|")) | {"com", "org", "net", "io", "dev"}
"""The last parts that make a dotted word a file's or a host's name, not a key."""
_SENTENCE_END = ".,;:!?"


def shaped(text: str) -> Iterable[str]:
    """The values of `SHAPED`, `CONSTRAINT` and `KEY` in `text`, without the punctuation that
    ends a sentence: not a phone of fewer than `_PHONE_DIGITS` digits, nor a dotted word
    whose last part is a file's extension or a host's domain, nor one inside a longer word
    (a path, an address, a call)."""
    end = 0
    for match in _SHAPE_START.finditer(text):
        found = None if match.start() < end else SHAPED.match(text, match.start())
        if found is None:
            continue
        end = found.end()  # `Alt+T` of `Ctrl+Alt+T` is not another
        value = found.group(0).rstrip(_SENTENCE_END)
        if value[0] in "+(" and sum(c.isdigit() for c in value) < _PHONE_DIGITS:
            continue
        yield value
    end = 0
    for match in _OPERATOR.finditer(text):
        if match.start() < end:
            continue
        start = _word_start(text, match.start())
        if start == match.start() and match.group(0) in ("==", "!="):
            continue  # a comparison (`x == 5`), not a version's
        found = CONSTRAINT.match(text, start)
        if found is not None and found.end() > match.end():
            end = found.end()
            yield found.group(0).rstrip(_SENTENCE_END)
    end = 0
    for match in _DOTTED_PART.finditer(text):
        start = _word_start(text, match.start())
        if start < end or (start > 0 and text[start - 1] in "/@:$"):
            continue
        found = KEY.match(text, start)
        if found is None:
            continue
        end = found.end()
        after = text[end : end + 2]
        if after[:1] and (after[0] in "(/@-" or after[0].isalnum() or after[0] == "_"):
            continue
        if len(after) == 2 and after[0] in ".:" and after[1].isalnum():
            continue
        value = found.group(0)
        if value.rsplit(".", 1)[-1] not in _EXTENSION_SET:
            yield value


LINE_HEAD = re.compile(r"[\s\[(]*")
GLUED = re.compile(r"(?<![^\s\"'`(\[<{])[^\s\"'`()\[\]<>{}]*[@/=][^\s\"'`()\[\]<>{}]*")
"""A word holding one of the characters that glue a value to what names it (`@`, `/`, `=`):
`lodash@4.17.21`, `tickets/INC-4412`, `db.internal:5432/app`, `settings.MAX_MB=25`. A `:`
alone does not make one: a word it glues is a time or a `host:port` that `VALUE` reads
(a log's `06:00:00` on every line, JSON's `":"`, read one by one, took 80 ms a megabyte).
It starts only where a word starts (the look-behind), so each word is read once."""
IN_WORD = re.compile(
    r"(?<![A-Za-z0-9_])(?:"
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{1,2}[/.][0-9]{1,2}[/.](?:[0-9]{4}|[0-9]{2})"  # date
    r"|v[0-9]+(?:\.[0-9]+)+|[0-9]+\.[0-9]+\.[0-9]+"  # version
    r"|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"  # UUID
    r"|(?=[0-9a-f]*[a-f])(?=[a-f]*[0-9])[0-9a-f]{7,64}"  # hash
    r"|[A-Z][A-Z0-9]{1,9}(?:-[0-9]{2,}){1,4}|[A-Z](?:-[0-9]{2,}){2,4}"  # id
    r"|(?=[A-Z]*[0-9])(?=[0-9]*[A-Z])[A-Z0-9]{5,12}"  # code
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"  # constant
    r"|(?<![.-])[A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*:[0-9]{2,5}"  # host:port, file:line
    r"|(?<![.-])" + _FILE_LINE + r")(?![A-Za-z0-9_])"
)
"""A value of `VALUE`'s shapes inside a `GLUED` word, whatever the `@`, `/`, `.` or `:`
around it (a date's, a version's, a host's own dots and colons are read as theirs). A host
starts where its name does, not after each of its dots and hyphens: started there, a run
of `a.a.a…` or `a-a-a…` was read to its end from each letter."""
USER_AT_HOST = re.compile(
    rf"(?<![A-Za-z0-9._%+{_LATIN}-])[A-Za-z0-9._%+{_LATIN}-]+@"
    r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
)
"""A user at a host inside a `GLUED` word (`svc@pg-2.internal` of a connection string),
searched apart from `IN_WORD`: its host may hold a `host:port` of its own. It starts where
a run of a local part's characters starts, as `VALUE`'s email does."""
WORD_END = ".,;:!?="
GLUED_CHARS = 40
"""A glued word up to this long is kept whole; a longer one (a connection string, a path
with a version deep in it) gives its values alone: it would cost the room of several facts."""


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
    timestamps (a pasted log has one on every line) are not facts anyone stated; then the
    words that hold a value glued to what names it (`glued`)."""
    starts: list[int] = []
    for match in VALUE.finditer(text):
        starts.append(match.start())
        value = match.group(0)
        if TIMESTAMP.fullmatch(value) and LINE_HEAD.fullmatch(
            text, _line_start(text, match.start()), match.start()
        ):
            continue
        yield value
    for match in _FILE_LINE_TAIL.finditer(text):
        # The file's name before its extension; glued to a folder, it is `glued`'s.
        start = _file_name_before(text, match.start())
        if start is not None:
            starts.append(start)
            yield text[start : match.end()]
    starts.sort()
    for match in WRITTEN_DATE.finditer(text):
        # A log's lines may start with one and a time (syslog's `Apr 19 10:22:01`).
        start, end = match.start(), match.end()
        if not (
            CLOCK_AFTER.match(text, end)
            and LINE_HEAD.fullmatch(text, _line_start(text, start), start)
        ):
            yield match.group(0)
    yield from glued(text, starts)
    yield from shaped(text)


def glued(text: str, found: Sequence[int] = ()) -> Iterable[str]:
    """Each word of `text` that holds a value glued to a name by `@`, `/` or `=`, the value
    itself maybe after a `.` or `:` (`hashicorp/aws@5.71.0`, `refs/tags/v3.1.2`,
    `kafka-2.internal:9092/payments`, `settings.MAX_MB=25`), whole up to `GLUED_CHARS` and
    without the punctuation that ends a sentence: the value with what it is the value of.
    A longer word gives its values alone; an `http(s)` address is a link, kept as one; a
    word where `VALUE` found a value (the ascending starts `found`: `library.py:58-59`) has
    given it already."""
    for match in GLUED.finditer(text):
        word = match.group(0).rstrip(WORD_END)
        start = match.start()
        if "http://" in word or "https://" in word:
            continue
        at = bisect.bisect_left(found, start)
        if at < len(found) and found[at] < start + len(word):
            continue
        if TIMESTAMP.match(word) and LINE_HEAD.fullmatch(text, _line_start(text, start), start):
            continue  # a log's timestamp, as in `values`
        inner = [m.group(0) for m in (*USER_AT_HOST.finditer(word), *IN_WORD.finditer(word))]
        if not inner:
            continue
        if len(word) <= GLUED_CHARS:
            yield word
        else:
            yield from (value[:VALUE_CHARS] for value in inner)


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def dotted(number: str) -> str | None:
    """The digits of a number's entry when they have three parts or more (a section, a
    version, an address, a date: `DOTTED`): said alone they say less, and a `number` is
    dropped before a `value`."""
    match = DOTTED.search(number)
    return match.group(0) if match is not None else None
