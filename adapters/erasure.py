"""Physical erasure of one session's stored events and snapshots, for the stores that keep
them on disk (SQLite, PostgreSQL).

Event-sourced stores are append-only by design; erasure is the one exception, for content
that must go (a user's erasure request). It deletes every row of the session's id, in one
transaction per table; the notification log keeps counting past the gap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.sqlite import SQLiteAggregateRecorder

from abridged.domain.errors import SessionError

__all__ = ["ErasureNotSupportedError", "erase_stored_events"]


class ErasureNotSupportedError(SessionError):
    """The store cannot erase events (the in-memory store ends with its process anyway)."""


def erase_stored_events(recorders: Sequence[Any], originator_id: UUID) -> int:
    """Deletes every stored event (and snapshot) of `originator_id` from `recorders`;
    returns how many rows went. Raises `ErasureNotSupportedError`, before deleting
    anything, when a recorder is not a SQLite or PostgreSQL one."""
    statements = [_statement(recorder) for recorder in recorders]
    erased = 0
    for recorder, (statement, key) in zip(recorders, statements, strict=True):
        with recorder.datastore.transaction(commit=True) as cursor:
            cursor.execute(statement, (key(originator_id),))
            erased += max(0, _rowcount(cursor))
    return erased


def _rowcount(cursor: Any) -> int:
    # eventsourcing wraps SQLite's cursor; psycopg's has rowcount itself.
    inner = getattr(cursor, "sqlite_cursor", cursor)
    return int(inner.rowcount)


def _statement(recorder: Any) -> tuple[Any, Any]:
    if isinstance(recorder, SQLiteAggregateRecorder):
        # SQLite rows hold the id as 32 hex digits (how eventsourcing writes them).
        return (
            f"DELETE FROM {recorder.events_table_name} WHERE originator_id = ?",
            lambda originator_id: originator_id.hex,
        )
    postgres = _postgres_recorder_class()
    if postgres is not None and isinstance(recorder, postgres):
        pg: Any = recorder
        from psycopg.sql import SQL, Identifier

        statement = SQL("DELETE FROM {schema}.{table} WHERE originator_id = %s").format(
            schema=Identifier(pg.datastore.schema),
            table=Identifier(pg.events_table_name),
        )
        as_text = pg.datastore.originator_id_type == "text"
        return statement, (lambda originator_id: str(originator_id) if as_text else originator_id)
    raise ErasureNotSupportedError(
        f"this store ({type(recorder).__name__}) cannot erase events: erasing needs a SQLite "
        "or PostgreSQL store (an in-memory store is gone when its process ends)"
    )


def _postgres_recorder_class() -> type | None:
    try:
        from eventsourcing.postgres import PostgresAggregateRecorder
    except ImportError:  # the postgres extra is not installed
        return None
    return PostgresAggregateRecorder
