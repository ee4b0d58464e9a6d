"""A fact of the facts ledger (`abridged.domain.ledger`): its kind, exact text, the messages it
came from and, for a fact read from a tool's call or output, the tool's name; how facts seen
again merge, and in which order a short ledger drops them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

LedgerKind = str
"""`request`, `constraint`, `file-read`, `file-modified`, `file-created`, `command`,
`command-failed`, `call`, `error`, `identifier`, `url` or `number`."""

KINDS: tuple[LedgerKind, ...] = (
    "request",
    "constraint",
    "file-modified",
    "file-created",
    "file-read",
    "command-failed",
    "command",
    "call",
    "error",
    "identifier",
    "url",
    "number",
)
PRIORITY: Mapping[LedgerKind, int] = {
    "number": 1,
    "file-read": 0,
    "identifier": 1,
    "command": 1,
    "call": 0,
    "error": 2,
    "command-failed": 2,
    "url": 2,
    "file-modified": 3,
    "file-created": 3,
    "request": 4,
    "constraint": 4,
}
"""Higher stays longer when the ledger's budget is short."""

RECENT_PER_KIND = 6
"""When the ledger must drop entries, the most recent this many of each kind (requests,
files, commands, errors, ...) go last: whatever its priority, every kind keeps its latest
facts, the ones an agent is most likely to need next."""


@attrs.frozen
class LedgerEntry:
    """One fact of the ledger, the messages it came from (positions, inclusive) and its
    `source`: the name of the tool whose call or output it was read from ("" for the user's
    and the agent's own text, and for entries stored before sources were recorded)."""

    kind: LedgerKind
    text: str
    first_position: int
    last_position: int
    source: str = ""

    @property
    def key(self) -> tuple[str, str]:
        """Entries with the same key are the same fact: files by path, the rest by text."""
        return (self.kind.split("-")[0], self.text)


def merge(existing: Sequence[LedgerEntry], new: Iterable[LedgerEntry]) -> tuple[LedgerEntry, ...]:
    """`existing` with `new` added: a fact seen again widens its range; a file read and
    later modified becomes modified; a command that failed once stays marked failed."""
    merged: dict[tuple[str, str], LedgerEntry] = {e.key: e for e in existing}
    for entry in new:
        key = entry.key
        old = merged.get(key)
        if old is None:
            merged[key] = entry
            continue
        kind = max(old.kind, entry.kind, key=_rank)
        merged[key] = LedgerEntry(
            kind,
            old.text,
            min(old.first_position, entry.first_position),
            max(old.last_position, entry.last_position),
            old.source or entry.source,
        )
    return tuple(merged.values())


def outranks(kind: LedgerKind, other: LedgerKind) -> bool:
    """Whether a fact of `kind` says more than the same fact of kind `other` (a file modified
    more than read, a command that failed more than one that ran)."""
    return _rank(kind) > _rank(other)


def _rank(kind: LedgerKind) -> tuple[int, int]:
    return (PRIORITY[kind], 1 if kind in {"command-failed", "file-created"} else 0)


def drop_order(
    entries: Sequence[LedgerEntry],
) -> Callable[[int], tuple[int, int, int, int, int]]:
    """The key that orders `entries` (by index) from the first a short ledger drops to the
    last (`abridged.domain.ledger.bounded`)."""
    recent: set[int] = set()
    # The oldest request is the task: it goes with the latest facts, last.
    requests = [i for i, e in enumerate(entries) if e.kind == "request"]
    if requests:
        recent.add(min(requests, key=lambda i: entries[i].first_position))
    seen: dict[str, int] = {}
    for i in sorted(range(len(entries)), key=lambda i: -entries[i].last_position):
        family = entries[i].key[0]
        if seen.get(family, 0) < RECENT_PER_KIND:
            recent.add(i)
            seen[family] = seen.get(family, 0) + 1

    def key(i: int) -> tuple[int, int, int, int, int]:
        entry = entries[i]
        # A rule the user stated stands until it is revoked; an ask is done with sooner.
        rule = entry.kind == "constraint"
        return (i in recent, PRIORITY[entry.kind], rule, entry.last_position, i)

    return key
