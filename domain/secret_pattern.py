"""A kind of secret and the regular expression that finds it.

`abridged.domain.redaction` applies these; `abridged.domain.secret_formats` and
`abridged.domain.secret_names` hold the default ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

__all__ = ["STARTS_FROM", "SecretPattern", "aligned_lower", "placeholder"]

STARTS_FROM = 2_000
"""Texts from this long are searched for a pattern's `starts` first (shorter ones by the
expression alone, which costs less than lowercasing them)."""

_FOLDS_ELSEWHERE = ("\u0130", "\u0131", "\u017f")
"""The characters that a case-insensitive expression reads as an ASCII letter (`İ` and `ı`
as `i`, `ſ` as `s`) but that do not lowercase to it, the only ones (a test checks every
code point)."""


def placeholder(kind: str) -> str:
    """What a secret of `kind` is replaced by: `[redacted <kind>]`."""
    return f"[redacted {kind}]"


def _as_tuple(values: Iterable[str]) -> tuple[str, ...]:
    return (values,) if isinstance(values, str) else tuple(values)


def aligned_lower(text: str) -> str | None:
    """`text` lowercased, character for character, where a case-insensitive expression's
    ASCII letters are read as their lowercase; `None` when a character lowercases to more
    than one, or is read as an ASCII letter without lowercasing to it (`ſ`)."""
    if text.isascii():
        return text.lower()
    if any(c in text for c in _FOLDS_ELSEWHERE):
        return None
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else None


def _positions(lowered: str, starts: tuple[str, ...]) -> list[int]:
    found: set[int] = set()
    for start in starts:
        at = lowered.find(start)
        while at >= 0:
            found.add(at)
            at = lowered.find(start, at + 1)
    return sorted(found)


@attrs.frozen
class SecretPattern:
    """A kind of secret and the regular expression that finds it.

    `group` names the part of a match that is the secret (0: all of it), so that a key name
    or a URL's user stays readable: `DB_PASSWORD=[redacted password]`."""

    kind: str
    pattern: str
    group: int = 0
    hints: tuple[str, ...] = attrs.field(default=(), converter=_as_tuple)
    """Lowercase strings one of which every match contains: a text holding none of them is
    not searched (a regular expression tried at every position of a long tool output costs
    more than looking for a word). Empty: always searched."""
    literals: tuple[str, ...] = attrs.field(default=(), converter=_as_tuple)
    """Strings, case and all, one of which every match contains (as the text reads when the
    pattern is tried, after the patterns before it): looked for once in all of a message's
    strings together, never in each (`narrow_patterns`), so that a pattern none of them can
    match is not tried on each. For a pattern whose own search is as fast as a hint's, such
    as one that starts with a literal prefix, where hints would cost a second search per
    text. Empty: none declared; the pattern is kept whenever its hints allow."""
    starts: tuple[str, ...] = attrs.field(default=(), converter=_as_tuple)
    """Lowercase ASCII strings one of which every match starts with, in the text lowercased:
    a long text (`STARTS_FROM`) is searched for them (`str.find`, many times faster than an
    expression tried at each position) and the expression tried only where one starts. The
    secrets found are the same. Empty: tried at each position."""
    compiled: re.Pattern[str] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not self.kind.strip() or any(c in self.kind for c in "[]\n"):
            raise ValueError(f"a secret kind is a short name without brackets, got {self.kind!r}")
        compiled = re.compile(self.pattern)
        if not 0 <= self.group <= compiled.groups:
            raise ValueError(f"pattern {self.pattern!r} has no group {self.group}")
        if any(h != h.lower() or not h for h in self.hints):
            raise ValueError(f"hints are non-empty lowercase strings, got {self.hints!r}")
        # A placeholder is bracketed: a literal without brackets is never half in one.
        if any(not literal or "[" in literal or "]" in literal for literal in self.literals):
            raise ValueError(f"literals are non-empty, without brackets, got {self.literals!r}")
        if any(not s or not s.isascii() or s != s.lower() for s in self.starts):
            raise ValueError(f"starts are non-empty lowercase ASCII strings, got {self.starts!r}")
        object.__setattr__(self, "compiled", compiled)

    def may_match(self, lowered: str) -> bool:
        """Whether a text (given lowercased) may hold a match, by the hints."""
        return not self.hints or any(hint in lowered for hint in self.hints)

    def redact(self, text: str) -> str:
        """`text` with every match's secret part replaced by the placeholder."""
        if self.starts and len(text) >= STARTS_FROM:
            return self.redact_lowered(text, aligned_lower(text))
        return self.by_expression(text)

    def searches(self, text: str) -> bool:
        """Whether `redact_lowered` reads `text`'s lowercase to find where to try a match."""
        return bool(self.starts) and len(text) >= STARTS_FROM

    def redact_lowered(self, text: str, lowered: str | None) -> str:
        """`redact(text)`, given `aligned_lower(text)` (`None`: the expression alone)."""
        if lowered is not None and self.searches(text):
            return self._redact_at_starts(text, lowered, placeholder(self.kind))
        return self.by_expression(text)

    def by_expression(self, text: str) -> str:
        """`redact(text)` by the expression alone, tried at each position (`starts` unread)."""
        mark = placeholder(self.kind)
        if self.group == 0:
            return self.compiled.sub(mark, text)
        return self.compiled.sub(lambda match: self._replaced(match, mark), text)

    def _replaced(self, match: re.Match[str], mark: str) -> str:
        if self.group == 0:
            return match.expand(mark)
        start, end = match.span(self.group)
        if start < 0:
            return match.group(0)
        whole = match.group(0)
        offset = match.start()
        return whole[: start - offset] + mark + whole[end - offset :]

    def _redact_at_starts(self, text: str, lowered: str, mark: str) -> str:
        """What `compiled.sub` gives, trying the expression only where a start is: it scans
        left to right, and after a match goes on from its end (no match is empty: each
        starts with a start)."""
        parts: list[str] = []
        done = 0
        for at in _positions(lowered, self.starts):
            if at < done:
                continue
            match = self.compiled.match(text, at)
            if match is None or match.end() == at:
                continue
            parts += (text[done:at], self._replaced(match, mark))
            done = match.end()
        if not parts:
            return text
        parts.append(text[done:])
        return "".join(parts)
