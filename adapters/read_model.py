"""The compactions read model: one SQL row per compaction, for dashboards and reports.

A pull projection: it remembers the id of the last notification it has stored, reads the
next page of `CompactionCompleted` notifications from the event store's log, and writes the
page's rows and its new position in one transaction. Killed at any moment, it resumes from
the last committed page: no row is lost or written twice (the unique key on session and
generation would refuse a duplicate anyway). `rebuild` drops the rows and starts again from
the first notification. Any SQLAlchemy database works (SQLite and PostgreSQL are tested);
it may be the event store's own database or another one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

import sqlalchemy as sa

from abridged.adapters.bootstrap import redact_passwords
from abridged.application.compactions import CompactionRecord, compaction_pages
from abridged.application.service import Sessions
from abridged.domain.errors import SessionError

__all__ = ["CompactionsReadModel", "ReadModelError", "read_model_url"]

PROJECTION = "compactions"

metadata = sa.MetaData()

compactions = sa.Table(
    "abridged_compactions",
    metadata,
    sa.Column("session_id", sa.String(36), primary_key=True),
    sa.Column("generation", sa.Integer, primary_key=True),
    sa.Column("notification_id", sa.BigInteger, nullable=False, unique=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("trigger", sa.String(16), nullable=False),
    sa.Column("first_position", sa.Integer, nullable=False),
    sa.Column("last_position", sa.Integer, nullable=False),
    sa.Column("retained_from", sa.Integer, nullable=False),
    sa.Column("messages_summarized", sa.Integer, nullable=False),
    sa.Column("tokens_before", sa.Integer, nullable=False),
    sa.Column("tokens_after", sa.Integer, nullable=False),
    sa.Column("strategy", sa.String(16), nullable=False),
    sa.Column("summarizer", sa.String(200), nullable=False),
    sa.Column("summarizer_input_tokens", sa.Integer, nullable=False),
    sa.Column("summarizer_output_tokens", sa.Integer, nullable=False),
    sa.Column("summary_tokens", sa.Integer, nullable=False),
    sa.Column("fallback", sa.String(16), nullable=True),
    sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
)

tracking = sa.Table(
    "abridged_projections",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("position", sa.BigInteger, nullable=False),
)


class ReadModelError(SessionError):
    """The read model's database cannot be reached or used."""


def read_model_url(location: str | Path) -> str:
    """A SQLAlchemy URL for a store location as `--db` takes it: a SQLite file path or a
    `postgresql://` URL (the psycopg 3 driver is named for SQLAlchemy)."""
    text = str(location)
    if text.startswith(("postgresql://", "postgres://")):
        rest, _, query = text.partition("://")[2].partition("?")
        schema = parse_qs(query).get("schema")
        if schema:
            # The table goes beside the events, in the store's schema.
            return f"postgresql+psycopg://{rest}?options=" + quote(f"-csearch_path={schema[0]}")
        return f"postgresql+psycopg://{rest}"
    if "://" in text:
        return text  # already a SQLAlchemy URL
    if text == ":memory:":
        raise ReadModelError("a read model needs a database file or server, not :memory:")
    return f"sqlite:///{Path(text).expanduser()}"


class CompactionsReadModel:
    """The `abridged_compactions` table, kept up to date from a `Sessions` store."""

    def __init__(self, url: str) -> None:
        try:
            self.engine = sa.create_engine(url)
            metadata.create_all(self.engine)
        except (sa.exc.SQLAlchemyError, ImportError) as error:
            raise ReadModelError(
                redact_passwords(f"cannot open the read model at {url}: {error}")
            ) from None

    def close(self) -> None:
        self.engine.dispose()

    def position(self) -> int:
        """The id of the last notification stored (0 before the first)."""
        with self.engine.connect() as connection:
            found = connection.execute(
                sa.select(tracking.c.position).where(tracking.c.name == PROJECTION)
            ).scalar()
        return int(found or 0)

    def update(
        self,
        app: Sessions,
        *,
        page_size: int = 100,
        after_page: Callable[[int, int], None] | None = None,
    ) -> int:
        """Stores the compactions recorded since the last update; returns how many.

        `after_page(position, rows)` is called once each page is committed."""
        stored = 0
        for position, rows in compaction_pages(app, self.position(), page_size):
            with self.engine.begin() as connection:
                if rows:
                    connection.execute(compactions.insert(), [_values(*r) for r in rows])
                self._move(connection, position)
            stored += len(rows)
            if after_page is not None:
                after_page(position, len(rows))
        return stored

    def clear(self) -> None:
        """Drops every row and the position, so the next update reads the whole log."""
        with self.engine.begin() as connection:
            connection.execute(compactions.delete())
            connection.execute(tracking.delete().where(tracking.c.name == PROJECTION))

    def forget(self, session_id: Any) -> int:
        """Deletes the rows of one session (an erased one: `Sessions.delete_session(...,
        erase=True)` does it itself when this table is in the store's own database); returns
        how many went."""
        with self.engine.begin() as connection:
            gone = connection.execute(
                compactions.delete().where(compactions.c.session_id == str(session_id))
            )
        return int(gone.rowcount)

    def rebuild(self, app: Sessions, *, page_size: int = 100) -> int:
        """Drops every row and reads the whole log again; returns how many rows it stored."""
        self.clear()
        return self.update(app, page_size=page_size)

    def rows(self, session_id: Any = None) -> list[dict[str, Any]]:
        """The stored rows, in the order they were recorded (optionally of one session)."""
        query = sa.select(compactions).order_by(compactions.c.notification_id)
        if session_id is not None:
            query = query.where(compactions.c.session_id == str(session_id))
        with self.engine.connect() as connection:
            return [dict(row._mapping) for row in connection.execute(query)]

    def _move(self, connection: sa.Connection, position: int) -> None:
        moved = connection.execute(
            tracking.update().where(tracking.c.name == PROJECTION).values(position=position)
        )
        if moved.rowcount == 0:
            connection.execute(tracking.insert().values(name=PROJECTION, position=position))


def _values(notification_id: int, record: CompactionRecord) -> dict[str, Any]:
    """The table's row of one compaction: the columns it keeps of the record."""
    values = {
        column.name: getattr(record, column.name)
        for column in compactions.columns
        if column.name not in ("notification_id", "occurred_at")
    }
    values.update(
        session_id=str(record.session_id), notification_id=notification_id, occurred_at=record.at
    )
    return values
