"""eventsourcing's PostgreSQL persistence, bounded and safe to start from many processes.

`Factory` is eventsourcing's `PostgresFactory` with two changes:

- every connection runs with a `statement_timeout` (`ABRIDGED_STATEMENT_TIMEOUT` seconds,
  30 by default; 0 turns it off) and libpq's `connect_timeout` (`POSTGRES_CONNECT_TIMEOUT`),
  so no store call waits for ever on a stuck server or an unreachable host;
- tables are created under a PostgreSQL advisory lock: many processes starting at once on an
  existing store no longer race their `CREATE ... IF NOT EXISTS` statements into
  "tuple concurrently updated". `CREATE_TABLE=n` skips creation, as in eventsourcing;
- inserted events go to the server in PostgreSQL's binary format (`Recorder`);
- large values are compressed with lz4 where the server has it (`default_toast_compression`
  on every connection; rows stored before keep theirs and read as before).

`abridged.adapters.bootstrap.persistence_env` selects this module for `postgresql://` URLs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# The module, not its classes: eventsourcing looks for exactly one factory class in this one.
from eventsourcing import postgres
from eventsourcing.persistence import AggregateRecorder, ApplicationRecorder, OperationalError
from psycopg.sql import SQL, Identifier

__all__ = ["DEFAULT_STATEMENT_TIMEOUT", "STATEMENT_TIMEOUT", "Factory", "Recorder"]

STATEMENT_TIMEOUT = "ABRIDGED_STATEMENT_TIMEOUT"
DEFAULT_STATEMENT_TIMEOUT = 30.0
"""Seconds one SQL statement may run before the server cancels it."""

CREATE_TABLES_LOCK = 0x61627269646765
"""The advisory lock key held while tables are created ("abridge" in ASCII)."""


class Recorder(postgres.PostgresApplicationRecorder):
    """eventsourcing's recorder, sending the events it inserts as binary parameters.

    In the text format psycopg writes each event's state as hex and escapes it twice (as a
    field of the event's composite type, then of the array of them): a 1 MB event took
    about 65 ms to insert, 20 ms of it in regular expressions; in the binary format, 10 ms.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # eventsourcing's own statement (`sql_invoke_pg_function_insert_events`), `%b`
        # instead of `%s`; the rows stored are the same.
        self.sql_invoke_pg_function_insert_events = SQL(
            "SELECT * FROM {schema}.{insert_events}((%b))"
        ).format(
            schema=Identifier(self.datastore.schema),
            insert_events=Identifier(self.pg_function_name_insert_events),
        )


class Factory(postgres.PostgresFactory):
    """`PostgresFactory` with timeouts on every connection, serialized table creation and
    binary inserts (`Recorder`)."""

    application_recorder_class = Recorder

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        raw = self.env.get(STATEMENT_TIMEOUT)
        try:
            seconds = DEFAULT_STATEMENT_TIMEOUT if raw in (None, "") else float(raw)
        except ValueError:
            raise OSError(f"{STATEMENT_TIMEOUT} must be a number of seconds, got {raw!r}") from None
        kwargs = self.datastore.pool.kwargs
        assert isinstance(kwargs, dict)
        # What the URL left out is left to libpq (PGHOST, PGPORT, PGUSER, PGPASSWORD,
        # ~/.pgpass); eventsourcing would pass "" (or port 5432), which overrides them.
        for key in ("host", "user", "password"):
            if kwargs.get(key) == "":
                del kwargs[key]
        if not (self.env.get(self.POSTGRES_PORT) or "").strip():
            kwargs.pop("port", None)
        kwargs["options"] = f"-c statement_timeout={max(0, round(seconds * 1000))}"
        connect = self.env.get(self.POSTGRES_CONNECT_TIMEOUT)
        if connect:
            kwargs.setdefault("connect_timeout", max(1, round(float(connect))))

    def aggregate_recorder(self, purpose: str = "events") -> AggregateRecorder:
        with self._creating_tables(f"{self._prefix()}_{purpose}"):
            return super().aggregate_recorder(purpose)

    def application_recorder(self) -> ApplicationRecorder:
        with self._creating_tables(f"{self._prefix()}_events"):
            return super().application_recorder()

    def env_create_table(self) -> bool:
        return not self._tables_exist and super().env_create_table()

    _tables_exist = False

    def _prefix(self) -> str:
        # The table names eventsourcing's PostgreSQL factory gives its recorders.
        return self.env.name.lower() or "stored"

    @contextmanager
    def _creating_tables(self, table: str) -> Iterator[None]:
        if not super().env_create_table():
            # Nothing to create, but one connection now: the pool would retry a refused
            # one (a wrong password, an unknown user) in the background until its timeout,
            # and report a timeout instead of the server's reason.
            with self._connect() as connection:
                self._prefer_lz4(connection)
            yield
            return
        connection = self._connect()
        with connection:
            self._prefer_lz4(connection)
            if _ready(connection, self.datastore.schema, table):
                # The common case, many processes starting on an existing store: nothing to
                # create, so no lock to wait for, and no second connection held meanwhile.
                connection.close()
                self._tables_exist = True
                try:
                    yield
                finally:
                    self._tables_exist = False
                self.datastore.register_type_adapters()
                return
            connection.execute(f"SET statement_timeout = '{CREATE_TABLES_WAIT}s'")
            connection.execute("SELECT pg_advisory_lock(%s)", (CREATE_TABLES_LOCK,))
            try:
                yield
            finally:
                connection.execute("SELECT pg_advisory_unlock(%s)", (CREATE_TABLES_LOCK,))

    def _prefer_lz4(self, connection: Any) -> None:
        """Has the pool's connections compress large values with lz4 when the server can:
        PostgreSQL's default, pglz, took about 13 ms to store a 1 MB event, lz4 about 6 ms
        (and reads it back faster). Probed on `connection` before the pool opens."""
        import psycopg

        kwargs = self.datastore.pool.kwargs
        assert isinstance(kwargs, dict)
        if LZ4_OPTION in kwargs.get("options", ""):
            return
        try:
            connection.execute(f"SET {LZ4_OPTION.removeprefix('-c ')}")
        except psycopg.Error:
            return  # a server built without lz4 (or older than 14) keeps its default
        kwargs["options"] = f"{kwargs.get('options', '')} {LZ4_OPTION}".strip()

    def _connect(self) -> Any:
        """A direct connection with the pool's settings; the server's refusal as it said it."""
        import psycopg

        kwargs = dict(self.datastore.pool.kwargs)  # type: ignore[arg-type]
        kwargs.pop("row_factory", None)
        kwargs.setdefault("connect_timeout", 5)
        try:
            return psycopg.connect(**kwargs, autocommit=True)
        except psycopg.OperationalError as error:
            raise OperationalError(str(error)) from error


LZ4_OPTION = "-c default_toast_compression=lz4"
CREATE_TABLES_WAIT = 120
"""Seconds a process waits for others to finish creating the tables."""


def _ready(connection: Any, schema: str, table: str) -> bool:
    """Whether the table and eventsourcing's insert functions already exist."""
    row = connection.execute(
        "SELECT to_regclass(%s) IS NOT NULL, "
        "EXISTS (SELECT 1 FROM pg_proc WHERE proname LIKE 'es_insert_events_%%')",
        (f"{schema}.{table}",),
    ).fetchone()
    return bool(row and row[0] and row[1])
