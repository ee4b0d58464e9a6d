"""How a snapshot writes a session's state: by columns, not one JSON object per value.

A snapshot (`abridged.application.snapshots`) keeps each retained message's counts, not its
body. The facts ledger is written as one `LedgerTable` (a column per field): hundreds to
thousands of entries, one JSON object each, would cost a transcoder call per entry and per
load. The retained tail is written as one `EntryTable`: a column per field (positions,
counts, block counts), and the rare truncations, replacements and whole messages apart.
Every column of integers, the tail's and the indexes' (`INT_COLUMNS`), is written as one
string (`IntColumn`): a run of consecutive integers as its ends, any other column packed as
32-bit (or 64-bit) integers in base64. A cold load decodes each column with one call instead
of parsing thousands of numbers: a 10,000-message snapshot decodes in about half the time.
Snapshots of the earlier shape (one `EntryCounts` per message) load as they did.
"""

from __future__ import annotations

import array
import base64
import sys
from collections.abc import Sequence
from typing import Any, cast

import attrs
from eventsourcing.persistence import Transcoding

from abridged.domain.context import Entry
from abridged.domain.ledger import LedgerEntry
from abridged.domain.messages import Message
from abridged.domain.truncation import Replacement, Truncation


@attrs.frozen
class EntryCounts:
    """A retained message in a snapshot of an earlier shape (one per message), without its
    body: where it is and how it shows. Only read: snapshots are written as `EntryTable`s."""

    position: int
    tokens: int
    block_tokens: tuple[int, ...]
    truncations: tuple[Truncation, ...] = ()
    replacements: tuple[Replacement, ...] = ()


@attrs.frozen
class EntryTable:
    """A snapshot's retained tail by columns: entry `k` is at `positions[k]`, counts
    `tokens[k]`, and its `block_lengths[k]` block counts follow those of the entries before it
    in `block_flat` (one flat list: a load builds no list per entry); `extras` lists
    `(k, truncations, replacements)` for the entries with either, `whole` lists `(k, entry)`
    for those stored whole (their event is not known). The others' messages are read back
    from their events, and so are the texts they are shown with instead (pruned outputs,
    downgraded thinking) for the entries `replaced` lists: from the `ToolsPruned` and
    `ReasoningDowngraded` events (megabytes of pruned output text at 10,000 messages, which
    every snapshot would otherwise write and every cold load decode)."""

    positions: list[int]
    tokens: list[int]
    block_lengths: list[int]
    block_flat: list[int]
    extras: list[tuple[int, tuple[Truncation, ...], tuple[Replacement, ...]]]
    whole: list[tuple[int, Entry]]
    replaced: list[int] = attrs.field(factory=list)
    revisions: list[int] = attrs.field(factory=list)
    """Each entry's `Entry.revision` plus one (0 for none); empty when no entry has one, and
    in snapshots taken before it was kept (every entry's is then none)."""

    @classmethod
    def of(cls, entries: Sequence[Entry], versions: Sequence[int]) -> EntryTable:
        pairs = list(zip(entries, versions, strict=True))
        # The first and last entries keep what they show: a deferred tail reads them alone.
        edges = {0, len(pairs) - 1}
        return cls(
            positions=[e.position for e in entries],
            tokens=[e.tokens for e in entries],
            block_lengths=[len(e.block_tokens) for e in entries],
            block_flat=[n for e in entries for n in e.block_tokens],
            extras=[
                (k, e.truncations, e.replacements if k in edges else ())
                for k, (e, v) in enumerate(pairs)
                if v and (e.truncations or (k in edges and e.replacements))
            ],
            whole=[(k, e) for k, (e, v) in enumerate(pairs) if not v],
            replaced=[
                k for k, (e, v) in enumerate(pairs) if v and e.replacements and k not in edges
            ],
            revisions=(
                [0 if e.revision is None else e.revision + 1 for e in entries]
                if any(e.revision is not None for e in entries)
                else []
            ),
        )

    def revision(self, k: int) -> int | None:
        """Entry `k`'s `Entry.revision`."""
        stored = self.revisions[k] if self.revisions else 0
        return stored - 1 if stored else None

    def __len__(self) -> int:
        return len(self.positions)

    def bodiless(self) -> int:
        return len(self.positions) - len(self.whole)

    def extended(self, more: EntryTable, offset: int) -> EntryTable:
        """This table followed by `more`, whose entries come at `offset` on."""
        return EntryTable(
            positions=[*self.positions, *more.positions],
            tokens=[*self.tokens, *more.tokens],
            block_lengths=[*self.block_lengths, *more.block_lengths],
            block_flat=[*self.block_flat, *more.block_flat],
            extras=[*self.extras, *((k + offset, t, r) for k, t, r in more.extras)],
            whole=[*self.whole, *((k + offset, e) for k, e in more.whole)],
            replaced=[*self.replaced, *(k + offset for k in more.replaced)],
            revisions=(
                [
                    *(self.revisions or [0] * len(self)),
                    *(more.revisions or [0] * len(more)),
                ]
                if self.revisions or more.revisions
                else []
            ),
        )

    def entry(self, k: int, message: Message | None) -> Entry:
        """Entry `k`, with `message` unless it is stored whole (not for one `replaced`: the
        first and last entries never are)."""
        if message is None:
            return dict(self.whole)[k]
        extras = next(((t, r) for j, t, r in self.extras if j == k), ((), ()))
        start = sum(self.block_lengths[:k])
        return Entry(
            self.positions[k],
            message,
            self.tokens[k],
            tuple(self.block_flat[start : start + self.block_lengths[k]]),
            extras[0],
            extras[1],
            self.revision(k),
        )

    def entries(
        self,
        messages: Sequence[Message | None],
        changes: Sequence[tuple[int, int, str | None]] = (),
    ) -> list[Entry]:
        """The entries, with `messages[k]` for each entry not stored whole, and the
        `replaced` entries shown as `changes` say: `(position, block index, text)`, in the
        order the session recorded them."""
        extras = {k: (t, r) for k, t, r in self.extras}
        whole = dict(self.whole)
        shown: dict[int, list[Replacement]] = {}
        if self.replaced:
            wanted = {self.positions[k] for k in self.replaced}
            for position, block_index, text in changes:
                if position in wanted:
                    shown.setdefault(position, []).append(Replacement(block_index, text))
        entries: list[Entry] = []
        empty: tuple[tuple[Truncation, ...], tuple[Replacement, ...]] = ((), ())
        flat = self.block_flat
        end = 0
        for k, (position, tokens, length, message) in enumerate(
            zip(self.positions, self.tokens, self.block_lengths, messages, strict=True)
        ):
            start, end = end, end + length
            if message is None:
                entries.append(whole[k])
                continue
            blocks = flat[start:end]
            truncations, replacements = extras.get(k, empty)
            if position in shown:
                replacements = tuple(shown[position])
            entries.append(
                Entry(
                    position,
                    message,
                    tokens,
                    tuple(blocks),
                    truncations,
                    replacements,
                    self.revision(k),
                )
            )
        return entries


@attrs.frozen
class LedgerTable:
    """A snapshot's facts ledger by columns (hundreds to thousands of entries: one JSON
    object each would cost a transcoder call per entry and per load)."""

    kinds: list[str]
    texts: list[str]
    firsts: list[int]
    lasts: list[int]
    sources: list[str] = attrs.field(factory=list)
    """The tools entries were read from (empty in snapshots taken before sources were
    recorded: every entry's source is then "")."""

    @classmethod
    def of(cls, entries: Sequence[LedgerEntry]) -> LedgerTable:
        return cls(
            kinds=[e.kind for e in entries],
            texts=[e.text for e in entries],
            firsts=[e.first_position for e in entries],
            lasts=[e.last_position for e in entries],
            sources=[e.source for e in entries] if any(e.source for e in entries) else [],
        )

    def entries(self) -> list[LedgerEntry]:
        sources = self.sources or [""] * len(self.kinds)
        return [
            LedgerEntry(kind, text, first, last, source)
            for kind, text, first, last, source in zip(
                self.kinds, self.texts, self.firsts, self.lasts, sources, strict=True
            )
        ]


@attrs.frozen
class IntColumn:
    """A column of integers as a snapshot writes it (`IntColumnAsText`); it loads as a
    plain list."""

    values: Sequence[int]


@attrs.frozen
class ToolIdTable:
    """The session's tool ids and the positions of the messages calling them, as two columns
    (it loads as the `dict` the session keeps)."""

    ids: list[str]
    positions: IntColumn


INT_COLUMNS = (
    "entry_versions",
    "prompt_positions",
    "thinking_positions",
    "output_sums",
    "saving_sums",
    "thinking_sums",
)
"""The session's attributes that are lists of integers, one item per retained message or
more: a snapshot writes each as an `IntColumn`."""


class EntryTableAsDict(Transcoding):
    """An `EntryTable` as JSON: integer columns, and the rare values apart."""

    type = EntryTable
    name = "entry_table"

    def encode(self, obj: EntryTable) -> dict[str, Any]:
        return {
            "positions": IntColumn(obj.positions),
            "tokens": IntColumn(obj.tokens),
            "block_lengths": IntColumn(obj.block_lengths),
            "block_flat": IntColumn(obj.block_flat),
            "extras": [[k, list(t), list(r)] for k, t, r in obj.extras],
            "whole": [[k, e] for k, e in obj.whole],
            "replaced": obj.replaced,
            "revisions": IntColumn(obj.revisions),
        }

    def decode(self, data: dict[str, Any]) -> EntryTable:
        if "block_flat" in data:
            lengths, flat = data["block_lengths"], data["block_flat"]
        else:  # a table of one list per entry (snapshots before the flat column)
            lengths = [len(b) for b in data["block_tokens"]]
            flat = [n for b in data["block_tokens"] for n in b]
        return EntryTable(
            positions=data["positions"],
            tokens=data["tokens"],
            block_lengths=lengths,
            block_flat=flat,
            extras=[(k, tuple(t), tuple(r)) for k, t, r in data["extras"]],
            whole=[(k, e) for k, e in data["whole"]],
            replaced=data.get("replaced", []),
            revisions=data.get("revisions", []),
        )


class LedgerTableAsDict(Transcoding):
    """A `LedgerTable` as JSON: five columns (four in snapshots older than `sources`)."""

    type = LedgerTable
    name = "ledger_table"

    def encode(self, obj: LedgerTable) -> dict[str, Any]:
        return {
            "kinds": obj.kinds,
            "texts": obj.texts,
            "firsts": obj.firsts,
            "lasts": obj.lasts,
            "sources": obj.sources,
        }

    def decode(self, data: dict[str, Any]) -> LedgerTable:
        return LedgerTable(
            data["kinds"], data["texts"], data["firsts"], data["lasts"], data.get("sources", [])
        )


TYPECODES = (
    ("B", 0, 2**8 - 1),
    ("b", -(2**7), 2**7 - 1),
    ("H", 0, 2**16 - 1),
    ("h", -(2**15), 2**15 - 1),
    ("I", 0, 2**32 - 1),
    ("i", -(2**31), 2**31 - 1),
    ("Q", 0, 2**64 - 1),
    ("q", -(2**63), 2**63 - 1),
)
"""The `array` typecodes a column may be packed with, smallest first, and their ranges: 1, 2,
4 and 8 bytes (C's `int` is 4 bytes on every platform CPython runs on; `array` checks the
length of what it reads back)."""


def pack_ints(values: Sequence[int]) -> str:
    """`values` as text: `r<first>,<count>` for a run of consecutive integers, else the
    typecode of the smallest integers that hold them all (`TYPECODES`) and the little-endian
    integers in base64. Block counts and token counts mostly take two bytes each, running
    sums four."""
    if not values:
        return "r0,0"
    first = values[0]
    if values[-1] == first + len(values) - 1 and list(values) == list(
        range(first, first + len(values))
    ):
        return f"r{first},{len(values)}"
    low, high = min(values), max(values)
    code = next(c for c, least, most in TYPECODES if least <= low and high <= most)
    packed = array.array(code, values)
    if sys.byteorder == "big":  # pragma: no cover
        packed.byteswap()
    return code + base64.b64encode(packed.tobytes()).decode("ascii")


def unpack_ints(text: str) -> list[int]:
    """The integers `pack_ints` wrote."""
    if text.startswith("r"):
        first, count = (int(part) for part in text[1:].split(","))
        return list(range(first, first + count))
    packed = array.array(text[0], base64.b64decode(text[1:]))
    if sys.byteorder == "big":  # pragma: no cover
        packed.byteswap()
    return packed.tolist()


class IntColumnAsText(Transcoding):
    """An `IntColumn` as one string (`pack_ints`); decoded, a plain list of integers."""

    type = IntColumn
    name = "int_column"

    def encode(self, obj: IntColumn) -> str:
        return pack_ints(obj.values)

    def decode(self, data: str) -> list[int]:
        return unpack_ints(data)


class ToolIdTableAsDict(Transcoding):
    """A `ToolIdTable` as two columns; decoded, the session's `dict` of tool ids."""

    type = ToolIdTable
    name = "tool_id_table"

    def encode(self, obj: ToolIdTable) -> dict[str, Any]:
        return {"ids": obj.ids, "positions": obj.positions}

    def decode(self, data: dict[str, Any]) -> dict[str, int]:
        return dict(zip(data["ids"], data["positions"], strict=True))


class EntryCountsAsList(Transcoding):
    """An `EntryCounts` as a JSON array: snapshots hold one per retained message."""

    type = EntryCounts
    name = "entry_counts"

    def encode(self, obj: EntryCounts) -> list[Any]:
        return [obj.position, obj.tokens, obj.block_tokens, obj.truncations, obj.replacements]

    def decode(self, data: list[Any]) -> EntryCounts:
        position, tokens, block_tokens, truncations, replacements = data
        return EntryCounts(
            position, tokens, tuple(block_tokens), tuple(truncations), tuple(replacements)
        )


def bodiless(entries: object) -> int:
    """How many entries of a stored snapshot state point at their events (for tests)."""
    if isinstance(entries, EntryTable):
        return entries.bodiless()
    return sum(1 for e in cast(Sequence[object], entries) if isinstance(e, EntryCounts))
