"""The snapshot interval grows with the retained tail, so a snapshot's cost per event stays
bounded while a cold load replays a bounded share of what it reads anyway."""

from __future__ import annotations

import itertools

import pytest

from abridged.application.snapshots import TAIL_PER_INTERVAL, snapshot_interval


@pytest.mark.parametrize(
    ("retained", "every"),
    [(0, 50), (48, 50), (1_000, 50), (1_001, 100), (2_000, 100), (2_001, 200), (10_084, 800)],
)
def test_the_interval_doubles_with_the_retained_tail(retained: int, every: int) -> None:
    assert snapshot_interval(50, retained) == every


def test_every_interval_is_a_multiple_of_the_smaller_ones_and_bounds_the_replay() -> None:
    seen = sorted({snapshot_interval(50, n) for n in range(0, 100_000, 97)})
    assert all(b % a == 0 for a, b in itertools.pairwise(seen))
    for retained in (1, 999, 1_000, 5_000, 20_000, 99_999):
        every = snapshot_interval(50, retained)
        # At least the base interval, and never more than twice the share of the tail.
        assert every >= 50
        assert every <= max(50, 2 * retained / TAIL_PER_INTERVAL)
