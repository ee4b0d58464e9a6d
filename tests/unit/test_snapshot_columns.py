"""Columns of integers in a snapshot: written as one string each, read back exactly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from abridged.application.snapshot_columns import (
    LedgerTable,
    LedgerTableAsDict,
    pack_ints,
    unpack_ints,
)
from abridged.domain.ledger import LedgerEntry

integers = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@given(st.lists(integers, max_size=300) | st.lists(st.integers(0, 10**6), max_size=300))
def test_any_column_reads_back_as_written(values: list[int]) -> None:
    assert unpack_ints(pack_ints(values)) == values


@given(st.integers(-(10**9), 10**9), st.integers(0, 5_000))
def test_a_run_of_consecutive_integers_is_written_as_its_ends(first: int, count: int) -> None:
    values = list(range(first, first + count))
    text = pack_ints(values)
    assert len(text) < 30
    assert unpack_ints(text) == values


def test_small_integers_take_four_bytes_and_large_ones_eight() -> None:
    small = [5, 1, 2**31 - 1, -(2**31)] * 25
    large = [*small, 2**31]
    assert pack_ints(small).startswith("i")
    assert pack_ints(large).startswith("q")
    assert len(pack_ints(large)) > 1.9 * len(pack_ints(small))
    assert unpack_ints(pack_ints(large)) == large


def test_counts_take_the_fewest_bytes_that_hold_them() -> None:
    lengths = [1, 3, 2, 250] * 50  # blocks per message
    counts = [40, 3_000, 65_535, 7] * 50  # tokens per block
    sums = [0, 70_000, 140_000, 2**31 + 5] * 50
    assert [pack_ints(v)[0] for v in (lengths, counts, sums)] == ["B", "H", "I"]
    assert [pack_ints([-1, 100] * 50)[0], pack_ints([-1, 300] * 50)[0]] == ["b", "h"]
    assert len(pack_ints(counts)) < 0.6 * len(pack_ints([*counts[:-1], 2**20]))
    for values in (lengths, counts, sums):
        assert unpack_ints(pack_ints(values)) == values


def test_a_ledger_table_keeps_each_entrys_source_and_reads_older_tables() -> None:
    entries = [
        LedgerEntry("error", "error: boom", 3, 3, "bash"),
        LedgerEntry("request", "Fix it.\nNow.", 0, 0),
    ]
    codec = LedgerTableAsDict()
    assert codec.decode(codec.encode(LedgerTable.of(entries))).entries() == entries
    # A snapshot taken before sources were recorded has four columns: no entry has a source.
    older = {"kinds": ["error"], "texts": ["error: boom"], "firsts": [3], "lasts": [3]}
    assert codec.decode(older).entries() == [LedgerEntry("error", "error: boom", 3, 3)]
