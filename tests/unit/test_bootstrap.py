"""Choosing the store from a location: memory, a SQLite file, or a PostgreSQL URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from abridged.adapters.bootstrap import persistence_env


def test_memory_and_sqlite(tmp_path: Path) -> None:
    assert persistence_env(None)["PERSISTENCE_MODULE"] == "eventsourcing.popo"
    assert persistence_env(":memory:")["PERSISTENCE_MODULE"] == "eventsourcing.popo"
    env = persistence_env(tmp_path / "s.sqlite3")
    assert env == {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(tmp_path / "s.sqlite3"),
    }


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
        "POSTGRES_SCHEMA": "agents",
    }
    assert persistence_env("postgres://localhost/x")["POSTGRES_PORT"] == "5432"


def test_a_postgresql_url_without_a_database_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="names no database"):
        persistence_env("postgresql://localhost:5432/")
