"""The reliability runs, reduced to seconds: kill -9 at random points, and several processes
on one session and on many, on a SQLite file and on PostgreSQL. `make stress` runs them at
full size (`python -m tests.reliability.stress`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.stress import concurrent_run, kill_run, quiet, report
from tests.support.postgres import fresh_database


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    quiet()
    if request.param == "sqlite":
        return str(tmp_path / "sessions.sqlite3")
    return fresh_database(request.getfixturevalue("postgres_server"))


def test_a_kill_at_any_moment_loses_no_acknowledged_write(db: str) -> None:
    figures = kill_run(db, kills=3, seed=11, max_delay=0.8)

    assert figures.kills == 3
    assert figures.acknowledged > 0, report(figures, "kill")
    assert figures.ok, report(figures, "kill")


@pytest.mark.parametrize("one_session", [True, False], ids=["one session", "a session each"])
def test_concurrent_writers_lose_and_duplicate_nothing(db: str, one_session: bool) -> None:
    figures = concurrent_run(db, processes=3, appends=8, one_session=one_session)

    assert figures.acknowledged == 3 * 8, report(figures, "writers")
    assert figures.ok, report(figures, "writers")
