"""Choosing the store from a location: memory, a SQLite file, or a PostgreSQL URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from abridged.adapters.bootstrap import bootstrap, persistence_env
from abridged.adapters.token_counters import CharRatioCounter
from abridged.application.service import Sessions


def test_memory_and_sqlite(tmp_path: Path) -> None:
    assert persistence_env(None)["PERSISTENCE_MODULE"] == "eventsourcing.popo"
    assert persistence_env(":memory:")["PERSISTENCE_MODULE"] == "eventsourcing.popo"
    env = persistence_env(tmp_path / "s.sqlite3")
    assert env == {
        "PERSISTENCE_MODULE": "abridged.adapters.sqlite_store",
        "SQLITE_DBNAME": str(tmp_path / "s.sqlite3"),
    }


def _synchronous(sessions: Sessions) -> int:
    datastore = sessions.factory.datastore  # type: ignore[attr-defined]
    with datastore.transaction(commit=False) as cursor:
        cursor.execute("PRAGMA synchronous")
        return int(cursor.fetchone()[0])


@pytest.mark.parametrize(
    ("setting", "pragma"), [(None, 1), ("normal", 1), ("NORMAL", 1), ("full", 2), (" Full ", 2)]
)
def test_a_sqlite_file_commits_with_the_chosen_synchronous_mode(
    tmp_path: Path, setting: str | None, pragma: int
) -> None:
    env = {} if setting is None else {"ABRIDGED_SQLITE_SYNCHRONOUS": setting}
    sessions = bootstrap(tmp_path / "s.sqlite3", env=env, counter=CharRatioCounter())
    try:
        sid = sessions.start_session(model="m", context_window=8_000, max_output_tokens=500)
        sessions.append_message(sid, {"role": "user", "content": "hello"})
        # SQLite's numbers: 1 is NORMAL, 2 is FULL; every connection of the pool has it.
        assert _synchronous(sessions) == pragma
        assert sessions.session(sid).message_count == 1
    finally:
        sessions.close()
    reopened = bootstrap(tmp_path / "s.sqlite3", counter=CharRatioCounter())
    try:
        assert reopened.session(sid).message_count == 1
    finally:
        reopened.close()


def test_an_unknown_synchronous_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="ABRIDGED_SQLITE_SYNCHRONOUS"):
        bootstrap(
            tmp_path / "s.sqlite3",
            env={"ABRIDGED_SQLITE_SYNCHRONOUS": "off"},
            counter=CharRatioCounter(),
        )


def test_a_sqlite_file_in_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        persistence_env(tmp_path / "nope" / "s.sqlite3")


def test_a_postgresql_url() -> None:
    env = persistence_env("postgresql://es:p%40ss@db.internal:6543/sessions?schema=agents")
    assert env == {
        "PERSISTENCE_MODULE": "abridged.adapters.stores",
        "POSTGRES_CONNECT_TIMEOUT": "5",
        "POSTGRES_ENABLE_DB_FUNCTIONS": "y",
        "POSTGRES_DBNAME": "sessions",
        "POSTGRES_HOST": "db.internal",
        "POSTGRES_PORT": "6543",
        "POSTGRES_USER": "es",
        "POSTGRES_PASSWORD": "p@ss",
        "POSTGRES_POOL_SIZE": "1",
        "POSTGRES_MAX_OVERFLOW": "9",
        "POSTGRES_SCHEMA": "agents",
    }
    # Left out of the URL: libpq's default applies (PGPORT, else 5432).
    assert persistence_env("postgres://localhost/x")["POSTGRES_PORT"] == ""


def test_a_postgresql_url_without_a_database_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="names no database"):
        persistence_env("postgresql://localhost:5432/")
