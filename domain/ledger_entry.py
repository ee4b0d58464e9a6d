"""A fact of the facts ledger (`abridged.domain.ledger`): its kind, exact text, the messages it
came from and, for a fact read from a tool's call or output, the tool's name; how facts seen
again merge, and in which order a short ledger drops them."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

LedgerKind = str
"""`request`, `constraint`, `file-read`, `file-modified`, `file-created`, `command`,
`command-failed`, `call`, `error`, `test-result`, `plan-todo`, `plan-doing`, `plan-done`,
`decision`, `identifier`, `mention`, `url`, `number` or `value`."""

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
    "test-result",
    "plan-todo",
    "plan-doing",
    "plan-done",
    "decision",
    "identifier",
    "mention",
    "url",
    "number",
    "value",
)
PRIORITY: Mapping[LedgerKind, int] = {
    "number": 1,
    "file-read": 0,
    "identifier": 1,
    "mention": 0,
    "command": 1,
    "call": 0,
    "error": 3,
    "test-result": 2,
    "plan-todo": 2,
    "plan-doing": 2,
    "plan-done": 2,
    "decision": 1,
    "command-failed": 3,
    "url": 2,
    "value": 2,
    "file-modified": 3,
    "file-created": 3,
    "request": 4,
    "constraint": 4,
}
"""Higher stays longer when the ledger's budget is short."""

MARKS: Mapping[LedgerKind, str] = {
    "command-failed": "✗ ",
    "file-created": "(new) ",
    "plan-done": "[x] ",
    "plan-doing": "[>] ",
    "plan-todo": "[ ] ",
}
"""What a ledger line shows before an entry's text to say its kind within its section."""

RECENT_PER_KIND = 6
"""When the ledger must drop entries, the most recent this many of each kind (requests,
files, commands, errors, ...) go last: whatever its priority, every kind keeps its latest
facts, the ones an agent is most likely to need next."""

KEPT_SHARE_PER_KIND = 0.3
"""And at least this share of each kind's entries, the latest first, goes last too: a kind
of many short facts (files, commands) is never left with only its last few because another
kind's long entries (prompts, pasted plans) took the room."""

DROPPED_FIRST: frozenset[LedgerKind] = frozenset({"mention"})
"""Kinds a short ledger drops before every other kind, whatever their worth, keeping only
their latest `RECENT_PER_KIND` (not `KEPT_SHARE_PER_KIND`) to the end: names the agent wrote
in prose without backticks are many and short, and weighed by the room they take, hundreds
of them would outlast a long error line. They take only the room the other facts leave."""

VALUE_BASE = 2.0
"""What one step of `PRIORITY` is worth when a short ledger weighs entries against the
tokens they take (`drop_order`)."""


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
    return (PRIORITY[kind], _FURTHER.get(kind, 0))


_FURTHER = {"command-failed": 1, "file-created": 1, "plan-doing": 1, "plan-done": 2}
"""Between kinds of one fact and one priority, the one that says more: a plan's item done
says more than one in progress, which says more than one to do."""


def drop_order(
    entries: Sequence[LedgerEntry], sizes: Mapping[int, int] | None = None
) -> Callable[[int], tuple[bool, bool, bool, float, int, bool, int, int]]:
    """The key that orders `entries` (by index) from the first a short ledger drops to the
    last (`abridged.domain.ledger.bounded`); `sizes` are the entries' rendered tokens.

    Two groups: the protected (the task, the most recent `RECENT_PER_KIND` of each kind and
    at least `KEPT_SHARE_PER_KIND` of each kind but `DROPPED_FIRST`, latest first) go last,
    and of them the task last of all (it is at most `TASK_SHARE` of the ledger's room): a
    short ledger full of the latest commands and files still says what the session is for.
    Within each group the kinds `DROPPED_FIRST` go first, and an
    entry's worth is `VALUE_BASE ** PRIORITY` over its tokens: the facts that say most for
    the room they take stay longest, so one long old prompt goes before a dozen short paths,
    and a kind of higher priority is worth `VALUE_BASE` times a kind below it."""
    recent: set[int] = set()
    # The oldest request is the task: it goes after the latest facts, last of all.
    requests = [i for i, e in enumerate(entries) if e.kind == "request"]
    task = min(requests, key=lambda i: entries[i].first_position) if requests else None
    if task is not None:
        recent.add(task)
    families: dict[str, list[int]] = {}
    for i in sorted(range(len(entries)), key=lambda i: -entries[i].last_position):
        families.setdefault(entries[i].key[0], []).append(i)
    for family, latest in families.items():
        share = 0.0 if family in DROPPED_FIRST else KEPT_SHARE_PER_KIND
        keep = max(RECENT_PER_KIND, math.ceil(len(latest) * share))
        recent.update(latest[:keep])

    def key(i: int) -> tuple[bool, bool, bool, float, int, bool, int, int]:
        entry = entries[i]
        # A rule the user stated stands until it is revoked; an ask is done with sooner.
        rule = entry.kind == "constraint"
        worth = VALUE_BASE ** PRIORITY[entry.kind] / max(sizes[i], 1) if sizes else 0.0
        last = entry.kind not in DROPPED_FIRST
        return (
            i in recent,
            i == task,
            last,
            worth,
            PRIORITY[entry.kind],
            rule,
            entry.last_position,
            i,
        )

    return key
