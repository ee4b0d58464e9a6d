"""Physical erasure of one session's stored events and snapshots, for the stores that keep
them on disk (SQLite, PostgreSQL).

Event-sourced stores are append-only by design; erasure is the one exception, for content
that must go (a user's erasure request). In one transaction it:

- records a **tombstone** for the session id (table `abridged_erased`) and makes sure the
  events and snapshots tables refuse, with a trigger, any later row of that id: a command
  that loaded the session before the erase and saves after it (a compaction whose summarizer
  was slow, another process) fails inside its own transaction and writes nothing;
- deletes every row of the session's id from the events and snapshots tables, and from the
  compactions read model (`abridged_compactions`) when it lives in the same database.

On SQLite the rows are deleted with `secure_delete` on (their bytes are overwritten, not only
unlinked), and the write-ahead log is checkpointed and truncated afterwards, so the erased
content is in neither the database file nor its `-wal`. On PostgreSQL the deleted rows stay
as dead tuples until the table is vacuumed (docs/security.md, "Erasure").

The notification log keeps counting past the gap.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.sqlite import SQLiteAggregateRecorder

from abridged.application.ports import ERASED_MARK
from abridged.domain.errors import SessionError

__all__ = ["ERASED_MARK", "ErasureNotSupportedError", "erase_stored_events"]

logger = logging.getLogger(__name__)


TOMBSTONES = "abridged_erased"
READ_MODEL = "abridged_compactions"


class ErasureNotSupportedError(SessionError):
    """The store cannot erase events (the in-memory store ends with its process anyway)."""


def erase_stored_events(recorders: Sequence[Any], originator_id: UUID) -> int:
    """Deletes every stored event (and snapshot) of `originator_id` from `recorders`, leaving
    a tombstone that refuses any later row of that id; returns how many rows went. Raises
    `ErasureNotSupportedError`, before deleting anything, when a recorder is not a SQLite or
    PostgreSQL one."""
    if not recorders:
        return 0
    kinds = {_kind(recorder) for recorder in recorders}
    if len(kinds) != 1:  # pragma: no cover - an application's recorders share one store
        raise ErasureNotSupportedError("the recorders are not of one store")
    if kinds == {"sqlite"}:
        return _erase_sqlite(recorders, originator_id)
    return _erase_postgres(recorders, originator_id)


def _kind(recorder: Any) -> str:
    if isinstance(recorder, SQLiteAggregateRecorder):
        return "sqlite"
    postgres = _postgres_recorder_class()
    if postgres is not None and isinstance(recorder, postgres):
        return "postgres"
    raise ErasureNotSupportedError(
        f"this store ({type(recorder).__name__}) cannot erase events: erasing needs a SQLite "
        "or PostgreSQL store (an in-memory store is gone when its process ends)"
    )


# SQLite.


def _erase_sqlite(recorders: Sequence[Any], originator_id: UUID) -> int:
    # SQLite rows hold the id as 32 hex digits (how eventsourcing writes them).
    key = originator_id.hex
    datastore = recorders[0].datastore
    erased = 0
    with datastore.get_connection(commit=True) as connection:
        raw = connection._sqlite_conn
        # The deleted cells' bytes are overwritten with zeros, whatever the build's default.
        raw.execute("PRAGMA secure_delete=ON")
        with connection.transaction(commit=True) as cursor:
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {TOMBSTONES} "
                "(originator_id TEXT PRIMARY KEY, erased_at TEXT NOT NULL)"
            )
            cursor.execute(
                f"INSERT OR IGNORE INTO {TOMBSTONES} VALUES (?, datetime('now'))", (key,)
            )
            for recorder in recorders:
                table = recorder.events_table_name
                _check_identifier(table)
                cursor.execute(
                    f"CREATE TRIGGER IF NOT EXISTS {table}_refuse_erased "
                    f"BEFORE INSERT ON {table} WHEN EXISTS (SELECT 1 FROM {TOMBSTONES} "
                    "WHERE originator_id = NEW.originator_id) "
                    f"BEGIN SELECT RAISE(ABORT, '{ERASED_MARK}'); END"
                )
                cursor.execute(f"DELETE FROM {table} WHERE originator_id = ?", (key,))
                erased += max(0, cursor.sqlite_cursor.rowcount)
            cursor.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (READ_MODEL,)
            )
            if cursor.fetchone():
                cursor.execute(
                    f"DELETE FROM {READ_MODEL} WHERE session_id = ?", (str(originator_id),)
                )
        # The log still holds the pages as they were before the erase: copy it into the
        # file (now overwritten) and empty it.
        busy, _, _ = raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            logger.warning(
                "erase of %s: the write-ahead log could not be emptied (a reader holds it); "
                "it is at the next checkpoint",
                originator_id,
            )
    return erased


# PostgreSQL.


def _erase_postgres(recorders: Sequence[Any], originator_id: UUID) -> int:
    from psycopg.sql import SQL, Identifier, Literal

    datastore = recorders[0].datastore
    schema = Identifier(datastore.schema)
    tombstones = Identifier(TOMBSTONES)
    refuse = Identifier("abridged_refuse_erased")
    # The id column is `uuid` unless the store was made with text ids.
    key: object = str(originator_id) if datastore.originator_id_type == "text" else originator_id
    erased = 0
    with datastore.transaction(commit=True) as cursor:
        # One erase at a time sets up the tombstone table and triggers.
        cursor.execute(SQL("SELECT pg_advisory_xact_lock(%s)"), (ERASE_SETUP_LOCK,))
        cursor.execute(
            SQL(
                "CREATE TABLE IF NOT EXISTS {schema}.{tombstones} (originator_id text PRIMARY "
                "KEY, erased_at timestamptz NOT NULL DEFAULT now())"
            ).format(schema=schema, tombstones=tombstones)
        )
        cursor.execute(
            SQL(
                "CREATE OR REPLACE FUNCTION {schema}.{refuse}() RETURNS trigger "
                "LANGUAGE plpgsql AS $$ BEGIN IF EXISTS (SELECT 1 FROM {schema}.{tombstones} "
                "WHERE originator_id = NEW.originator_id::text) THEN RAISE EXCEPTION {mark} "
                "USING ERRCODE = 'integrity_constraint_violation'; END IF; RETURN NEW; END $$"
            ).format(schema=schema, refuse=refuse, tombstones=tombstones, mark=Literal(ERASED_MARK))
        )
        for recorder in recorders:
            table = Identifier(recorder.events_table_name)
            # Waits for inserts in flight and holds new ones back until this commits: a row
            # inserted meanwhile would be neither deleted nor refused.
            cursor.execute(
                SQL("LOCK TABLE {schema}.{table} IN SHARE ROW EXCLUSIVE MODE").format(
                    schema=schema, table=table
                )
            )
            cursor.execute(
                SQL(
                    "CREATE OR REPLACE TRIGGER {trigger} BEFORE INSERT ON {schema}.{table} "
                    "FOR EACH ROW EXECUTE FUNCTION {schema}.{refuse}()"
                ).format(
                    trigger=Identifier(f"{recorder.events_table_name}_refuse_erased"),
                    schema=schema,
                    table=table,
                    refuse=refuse,
                )
            )
        cursor.execute(
            SQL(
                "INSERT INTO {schema}.{tombstones} (originator_id) VALUES (%s) "
                "ON CONFLICT DO NOTHING"
            ).format(schema=schema, tombstones=tombstones),
            (str(originator_id),),
        )
        for recorder in recorders:
            cursor.execute(
                SQL("DELETE FROM {schema}.{table} WHERE originator_id = %s").format(
                    schema=schema, table=Identifier(recorder.events_table_name)
                ),
                (key,),
            )
            erased += max(0, int(cursor.rowcount))
        cursor.execute(
            SQL("SELECT to_regclass(%s) IS NOT NULL"), (f"{datastore.schema}.{READ_MODEL}",)
        )
        row = cursor.fetchone()
        if row and _first(row):
            cursor.execute(
                SQL("DELETE FROM {schema}.{table} WHERE session_id = %s").format(
                    schema=schema, table=Identifier(READ_MODEL)
                ),
                (str(originator_id),),
            )
    return erased


ERASE_SETUP_LOCK = 0x6162726964676566
"""The advisory lock key held while an erase sets up the tombstones ("abridgef")."""


def _first(row: Any) -> Any:
    return row[0] if isinstance(row, (tuple, list)) else next(iter(row.values()))


def _check_identifier(name: str) -> None:
    if not name.replace("_", "").isalnum():  # pragma: no cover - eventsourcing's own names
        raise ErasureNotSupportedError(f"unexpected table name {name!r}")


def _postgres_recorder_class() -> type | None:
    try:
        from eventsourcing.postgres import PostgresAggregateRecorder
    except ImportError:  # the postgres extra is not installed
        return None
    return PostgresAggregateRecorder
