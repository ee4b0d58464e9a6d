"""A kind of secret and the regular expression that finds it.

`abridged.domain.redaction` applies these; `abridged.domain.secret_formats` and
`abridged.domain.secret_names` hold the default ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

__all__ = ["SecretPattern", "placeholder"]


def placeholder(kind: str) -> str:
    """What a secret of `kind` is replaced by: `[redacted <kind>]`."""
    return f"[redacted {kind}]"


def _as_tuple(values: Iterable[str]) -> tuple[str, ...]:
    return (values,) if isinstance(values, str) else tuple(values)


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
        object.__setattr__(self, "compiled", compiled)

    def may_match(self, lowered: str) -> bool:
        """Whether a text (given lowercased) may hold a match, by the hints."""
        return not self.hints or any(hint in lowered for hint in self.hints)

    def redact(self, text: str) -> str:
        """`text` with every match's secret part replaced by the placeholder."""
        mark = placeholder(self.kind)
        if self.group == 0:
            return self.compiled.sub(mark, text)

        def replace(match: re.Match[str]) -> str:
            start, end = match.span(self.group)
            if start < 0:
                return match.group(0)
            whole = match.group(0)
            offset = match.start()
            return whole[: start - offset] + mark + whole[end - offset :]

        return self.compiled.sub(replace, text)
