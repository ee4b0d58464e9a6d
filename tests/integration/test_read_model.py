"""The compactions read model: its rows are the compaction events, it resumes after being
killed without gaps or duplicates, and it rebuilds from scratch. Every scenario runs with the
events and the table in a SQLite file and in a PostgreSQL database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.read_model import CompactionsReadModel, read_model_url
from abridged.application.compactions import InvalidPageSizeError
from abridged.application.service import Sessions
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.e2e.test_replay_transcripts import COUNTER, WINDOWS, transcripts
from tests.integration.test_stored_sessions import open_store
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import feed
from tests.support.fakes import FakeSummarizer, FakeTokenCounter
from tests.support.postgres import fresh_database
from tests.support.replays import ON_ONE_WORKER, Replayed, replay

ROOT = Path(__file__).resolve().parents[2]
FAKE_COUNTER = FakeTokenCounter()


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "sessions.sqlite3")
    return fresh_database(request.getfixturevalue("postgres_server"))


def expected_rows(app: Sessions, session_ids: list[UUID]) -> list[dict[str, Any]]:
    """What the table must hold: one row per `CompactionCompleted`, read from each session's
    own events (not from the notification log the read model pages through)."""
    rows = []
    for session_id in session_ids:
        trigger = fallback = None
        for event in app.history(session_id):
            if isinstance(event, Session.CompactionThresholdHit):
                trigger, fallback = event.decision.trigger, None
            elif isinstance(event, Session.CompactionFailed):
                fallback = event.fallback
            elif isinstance(event, Session.CompactionCompleted):
                rows.append(
                    {
                        "session_id": str(session_id),
                        "generation": event.generation,
                        "version": event.originator_version,
                        "trigger": trigger,
                        "first_position": event.summary.first_position,
                        "last_position": event.summary.last_position,
                        "retained_from": event.retained_from,
                        "messages_summarized": event.messages_summarized,
                        "tokens_before": event.tokens_before,
                        "tokens_after": event.tokens_after,
                        "strategy": event.strategy,
                        "summarizer": event.summarizer,
                        "summarizer_input_tokens": event.summarizer_input_tokens,
                        "summarizer_output_tokens": event.summarizer_output_tokens,
                        "summary_tokens": event.summary.tokens,
                        "fallback": fallback,
                        "occurred_at": event.timestamp.replace(tzinfo=None),
                    }
                )
    return rows


def comparable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for stored in rows:
        row = dict(stored)
        row.pop("notification_id", None)
        # SQLite gives back naive times; both stores hold UTC.
        moment = row["occurred_at"]
        if moment.tzinfo is not None:
            moment = moment.astimezone(UTC)
        row["occurred_at"] = moment.replace(tzinfo=None)
        out.append(row)
    return sorted(out, key=lambda r: (r["session_id"], r["generation"]))


def filled_store(db: str, paths: list[Path], window: int = 16_000) -> tuple[Sessions, list[UUID]]:
    app = bootstrap(db, counter=COUNTER)
    return app, [replay(app, path, window) for path in paths]


def busy_store(db: str, sessions: int, turns: int = 30) -> tuple[Sessions, list[UUID]]:
    """Sessions that compact every few turns, fed in turn so their events interleave in the
    notification log."""
    app = bootstrap(db, counter=FAKE_COUNTER, summarizer=FakeSummarizer(words(60, "fact")))
    ids = [start_busy(app) for _ in range(sessions)]
    for i in range(turns):
        for session_id in ids:
            feed(app, session_id, list(turn(f"Request {i}", [words(200)])), FAKE_COUNTER)
    return app, ids


def start_busy(app: Sessions) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=3_000,
        max_output_tokens=500,
        tools=TOOLS,
        settings=CompactionSettings(
            threshold_floor_tokens=0,
            threshold_ratio=0.3,
            keep_recent_turns=1,
            tool_output_mode="keep_all",
        ),
    )


def needs_transcripts(test: Callable[..., None]) -> Callable[..., None]:
    marked: Callable[..., None] = pytest.mark.transcripts(test)
    skip = pytest.mark.skipif(not transcripts(), reason="the shared transcripts are absent")
    return skip(marked)  # type: ignore[no-any-return]


@ON_ONE_WORKER
@needs_transcripts
@pytest.mark.parametrize("window", WINDOWS)
def test_rows_equal_the_compaction_events_of_every_replayed_transcript(
    tmp_path: Path, window: int, default_replays: Callable[[int], Replayed]
) -> None:
    # Events in memory (their store is tested below), the table in a SQLite file.
    replayed = default_replays(window)
    app, ids = replayed.app, list(replayed.session_ids.values())
    model = CompactionsReadModel(read_model_url(tmp_path / "read-model.sqlite3"))

    stored = model.update(app, page_size=7)

    rows = model.rows()
    assert stored == len(rows) > 0
    assert comparable(rows) == comparable(expected_rows(app, ids))
    ids = [r["notification_id"] for r in rows]
    assert ids == sorted(set(ids))
    model.close()


def test_the_table_follows_new_compactions_and_rebuilds_from_scratch(db: str) -> None:
    app, ids = busy_store(db, sessions=1, turns=12)
    model = CompactionsReadModel(read_model_url(db))
    first = model.update(app)
    assert first == len(model.rows()) > 0
    assert model.update(app) == 0  # nothing new: nothing read twice

    ids.append(start_busy(app))
    for i in range(12):
        for session_id in ids:
            feed(app, session_id, list(turn(f"More {i}", [words(200)])), FAKE_COUNTER)
    more = model.update(app, page_size=3)
    assert more > 0
    assert comparable(model.rows()) == comparable(expected_rows(app, ids))

    before = model.rows()
    assert model.rebuild(app) == first + more
    assert model.rows() == before
    model.close()


KILLABLE = """
import sys, time
from abridged.adapters.bootstrap import bootstrap
from abridged.application.compactions import InvalidPageSizeError
from abridged.adapters.read_model import CompactionsReadModel, read_model_url
db = sys.argv[1]
app = bootstrap(db)
model = CompactionsReadModel(read_model_url(db))
print("started", flush=True)
model.update(app, page_size=1, after_page=lambda position, rows: time.sleep(0.1))
print("finished", flush=True)
"""


def test_a_killed_projection_resumes_without_gaps_or_duplicates(db: str) -> None:
    app, ids = busy_store(db, sessions=2)
    model = CompactionsReadModel(read_model_url(db))
    total = len(expected_rows(app, ids))
    assert total >= 10

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-c", KILLABLE, db], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while len(model.rows()) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:  # pragma: no cover - only when the wait timed out
            process.kill()
    assert process.returncode == -signal.SIGKILL
    assert process.stdout is not None
    assert "finished" not in process.stdout.read()
    partial = model.rows()
    assert 3 <= len(partial) < total
    # What was committed is a prefix of the log, and the position is its last row.
    assert model.position() == partial[-1]["notification_id"]

    model.update(app, page_size=5)

    rows = model.rows()
    assert comparable(rows) == comparable(expected_rows(app, ids))
    assert rows[: len(partial)] == partial
    keys = [(r["session_id"], r["generation"]) for r in rows]
    assert len(keys) == len(set(keys)) == total
    model.close()


def test_sessions_stored_by_an_earlier_version_have_their_rows(tmp_path: Path) -> None:
    # Their events carry the topics of the layout before the `abridged` package.
    db = tmp_path / "old.sqlite3"
    app, session_id, _ = open_store(db)
    model = CompactionsReadModel(read_model_url(db))

    model.update(app)

    assert comparable(model.rows()) == comparable(expected_rows(app, [session_id]))
    assert len(model.rows()) == 2
    model.close()


def test_the_table_goes_in_the_store_s_postgresql_schema(postgres_server: str) -> None:
    import psycopg

    url = fresh_database(postgres_server)
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("CREATE SCHEMA dashboards")
    app = bootstrap(f"{url}?schema=dashboards", counter=FAKE_COUNTER)
    start_busy(app)
    model = CompactionsReadModel(read_model_url(f"{url}?schema=dashboards"))
    model.update(app)
    model.close()

    with psycopg.connect(url) as connection:
        tables = connection.execute(
            "SELECT table_schema FROM information_schema.tables "
            "WHERE table_name = 'abridged_compactions'"
        ).fetchall()
    assert tables == [("dashboards",)]


def test_a_page_holds_at_least_one_notification(tmp_path: Path) -> None:
    app = bootstrap(counter=FAKE_COUNTER)
    model = CompactionsReadModel(read_model_url(tmp_path / "read-model.sqlite3"))
    with pytest.raises(InvalidPageSizeError):
        model.update(app, page_size=0)
    assert model.position() == 0
    model.close()
