"""Columns of integers in a snapshot: written as one string each, read back exactly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from abridged.application.snapshots import pack_ints, unpack_ints

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
