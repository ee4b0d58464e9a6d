"""The names of code the agent writes in prose without backticks (`parse_config`, `useEffect`,
`session.commit()`): the ledger's `mention` entries, the kind a short ledger drops first
(`abridged.domain.ledger_entry.DROPPED_FIRST`), and which of them another entry already
quotes (docs/ledger.md)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from abridged.domain.ledger_entry import LedgerEntry

MENTIONED = re.compile(
    r"(?<![A-Za-z0-9_\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f./\\@$:#-])"
    r"(?:[A-Za-z_][A-Za-z0-9_]{0,63}(?:\.[A-Za-z_][A-Za-z0-9_]{0,63}){1,4}(?=\()"
    r"|(?=[A-Za-z0-9_]*[a-z])[A-Za-z][A-Za-z0-9]{0,63}(?:_[A-Za-z0-9]{1,64}){1,8}"
    r"|[a-z]{1,32}[A-Z][A-Za-z0-9]{0,63}|[A-Z][a-z0-9]{1,32}[A-Z][A-Za-z0-9]{0,63})"
    r"(?![A-Za-z0-9_\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f/\\@-]|\.[A-Za-z0-9_])"
)
"""A name the agent wrote in prose, of a shape that says it is code: the dotted name of a
call (`session.commit` in `session.commit()`), `snake_case` (with a lowercase letter:
`MAX_SIZE` is a `value`), `camelCase`, `PascalCase`; not a word inside a path, a file name
(`parse_config.py`) or an address. Its edges are Latin letters, digits and `_`: a name glued
to the words of a script without spaces (`parse_config関数を`) is found, a part of a Latin
word (`naïveBayes`) is not. Each try starts at a word's start only (the look-behind), and
every run is bounded."""
MENTION_CHARS = (4, 80)
"""A mention is kept when it is this many characters long, inclusive."""
MAX_DOTTED = 5
"""The most parts a dotted name `MENTIONED` finds has: a call's name and four more."""
DOTTED_RUN = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*")


def mentions(prose: str, position: int) -> Iterable[LedgerEntry]:
    """The `mention` entries of the agent's `prose` (its text with the backticked names,
    which are `identifier` entries, and the links taken out), in order."""
    low, high = MENTION_CHARS
    for name in MENTIONED.findall(prose):
        if low <= len(name) <= high:
            yield LedgerEntry("mention", name, position, position)


def unquoted_mentions(
    found: Sequence[LedgerEntry], held: Sequence[LedgerEntry]
) -> list[LedgerEntry]:
    """`found` less the mentions whose name another entry of `found` or `held` already
    quotes as a word (in a path, a command, an error line, a call, a name in backticks, a
    prompt): a name written there is shown there, and listed again it would only take
    room. Looked up among the words of those entries (`_words`), not as substrings: a
    compaction can find thousands of names, and a ledger holds thousands of entries."""
    if not any(e.kind == "mention" for e in found):
        return list(found)
    quoted = _words(e.text for e in (*held, *found) if e.kind != "mention")
    return [e for e in found if e.kind != "mention" or e.text not in quoted]


def _words(texts: Iterable[str]) -> set[str]:
    """Every name `MENTIONED` could find in `texts`: each run of ASCII letters, digits,
    underscores and dots between other characters, and each run of its dot-separated parts
    (`session.commit` in `self.session.commit()`; up to `MAX_DOTTED` parts at a time)."""
    words: set[str] = set()
    for text in texts:
        for run in DOTTED_RUN.findall(text):
            parts = run.split(".")
            for i in range(len(parts)):
                for j in range(i + 1, min(len(parts), i + MAX_DOTTED) + 1):
                    words.add(".".join(parts[i:j]))
    return words
