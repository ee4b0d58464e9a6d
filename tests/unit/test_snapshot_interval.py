"""The snapshot interval grows with the retained tail, so a snapshot's cost per event stays
bounded while a cold load replays a bounded share of what it reads anyway."""

from __future__ import annotations

import itertools
from typing import Any
from uuid import UUID, uuid4

import pytest

from abridged.application.snapshots import (
    READS_THE_TAIL,
    TAIL_PER_INTERVAL,
    snapshot_due,
    snapshot_interval,
)
from abridged.domain.session import Session


@pytest.mark.parametrize(
    ("retained", "every"),
    [(0, 50), (48, 50), (6_000, 50), (6_001, 100), (10_084, 100), (12_000, 100), (12_001, 200)],
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


def recorded(kind: type[Any], version: int, session_id: UUID) -> Any:
    event = object.__new__(kind)
    object.__setattr__(event, "originator_id", session_id)
    object.__setattr__(event, "originator_version", version)
    return event


def test_an_event_that_reads_the_tail_on_replay_is_snapshotted_at_once() -> None:
    session_id, other = uuid4(), uuid4()
    appended = [recorded(Session.MessageAppended, v, session_id) for v in (101, 102)]
    assert not snapshot_due(session_id, appended, 50, 10)
    assert snapshot_due(
        session_id, [*appended, recorded(Session.MessageAppended, 150, session_id)], 50, 10
    )
    for kind in READS_THE_TAIL:
        assert snapshot_due(session_id, [*appended, recorded(kind, 103, session_id)], 50, 10)
        assert not snapshot_due(session_id, [*appended, recorded(kind, 103, other)], 50, 10)
    others: tuple[type[Any], ...] = (
        Session.CompactionSuppressed,
        Session.LedgerUpdated,
        Session.CompactionRequested,
    )
    for other_kind in others:
        event = recorded(other_kind, 103, session_id)
        assert not snapshot_due(session_id, [*appended, event], 50, 10)
