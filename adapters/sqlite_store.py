"""eventsourcing's SQLite persistence, with the durability of a commit as a setting.

eventsourcing keeps a SQLite file in WAL mode and leaves SQLite's default
`synchronous=FULL`: every commit waits for the write-ahead log to reach the disk (an fsync,
2 to 9 ms on the machine of docs/performance.md, more than everything else a request costs).
`ABRIDGED_SQLITE_SYNCHRONOUS` chooses (`bootstrap(..., env=...)` or the environment):

- `normal` (the default): in WAL mode a commit writes the log without waiting for the disk;
  the log is synced at each checkpoint. A committed session survives the process crashing or
  being killed at any point; a power failure or an operating-system crash may lose the last
  commits before a checkpoint (the file stays consistent: they are rolled back as a whole).
- `full`: a commit returns once the log is on the disk; it also survives a power failure, for
  one fsync per write.

Every connection also runs with `secure_delete` on (deleted content is overwritten, not only
unlinked: what an erase removes leaves no bytes behind, whatever the SQLite build's default),
and a new store file is created readable by its owner only (0600; SQLite gives its `-wal`
and `-shm` files the same permissions).

`abridged.adapters.bootstrap.persistence_env` selects this module for SQLite files.
"""

from __future__ import annotations

import os
from typing import Any

# The module, not its classes: eventsourcing looks for exactly one factory class in this one.
from eventsourcing import sqlite

__all__ = ["DEFAULT_SYNCHRONOUS", "SYNCHRONOUS", "Factory"]

SYNCHRONOUS = "ABRIDGED_SQLITE_SYNCHRONOUS"
DEFAULT_SYNCHRONOUS = "normal"
MODES = ("normal", "full")


class Factory(sqlite.SQLiteFactory):
    """`SQLiteFactory` whose connections commit with the chosen `synchronous` mode."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        mode = (self.env.get(SYNCHRONOUS) or DEFAULT_SYNCHRONOUS).strip().lower()
        if mode not in MODES:
            raise OSError(f"{SYNCHRONOUS} must be one of {', '.join(MODES)}, got {mode!r}")
        self.synchronous = mode
        _create_private(self.datastore.pool.db_name)
        pool = self.datastore.pool
        create = pool._create_connection

        def create_connection() -> sqlite.SQLiteConnection:
            connection = create()
            connection._sqlite_conn.execute(f"PRAGMA synchronous={mode.upper()}")
            connection._sqlite_conn.execute("PRAGMA secure_delete=ON")
            return connection

        pool._create_connection = create_connection  # type: ignore[method-assign]


def _create_private(db_name: str) -> None:
    """Creates the store's file, empty and 0600, when it does not exist yet (SQLite would
    create it with the process's umask, usually 0644)."""
    if not db_name or ":memory:" in db_name or "mode=memory" in db_name:
        return
    path = db_name.removeprefix("file:").split("?", 1)[0]
    try:
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return
    except OSError:
        return  # SQLite's own open reports the problem, in its words
    os.close(descriptor)
