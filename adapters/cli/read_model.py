"""`abridged read-model`: the compactions table dashboards query, kept from the event log."""

from __future__ import annotations

import json
from collections.abc import Callable

import click

from abridged.adapters.cli.common import db_option, main, open_store
from abridged.adapters.cli.progress import counting


@main.group("read-model")
def read_model() -> None:
    """The `abridged_compactions` table: one row per compaction, in any SQL database."""


def _options(f: Callable[..., None]) -> Callable[..., None]:
    f = click.option(
        "--to",
        "target",
        default=None,
        help="A SQLAlchemy URL for the table (default: the event store's own database).",
    )(f)
    f = click.option("--page-size", type=click.IntRange(min=1), default=100, show_default=True)(f)
    return db_option()(f)


def _run(db: str, target: str | None, page_size: int, rebuild: bool) -> None:
    # SQLAlchemy is imported here, not when the command line starts: a fifth of the start-up
    # of every other command.
    from abridged.adapters.read_model import CompactionsReadModel, ReadModelError, read_model_url

    app = open_store(db, read_only=True)
    try:
        model = CompactionsReadModel(read_model_url(target or db))
    except ReadModelError as error:
        raise click.ClickException(str(error)) from None
    try:
        if rebuild:
            model.clear()
        start = model.position()
        last = app.recorder.max_notification_id() or 0
        with counting(
            total=max(0, last - start), description="compactions", unit="event"
        ) as advance:
            done = start

            def after_page(position: int, rows: int) -> None:
                nonlocal done
                advance(min(position, last) - done)
                done = min(position, last)

            stored = model.update(app, page_size=page_size, after_page=after_page)
        total = len(model.rows())
        click.echo(json.dumps({"stored": stored, "rows": total, "position": model.position()}))
    finally:
        model.close()


@read_model.command()
@_options
def update(db: str, target: str | None, page_size: int) -> None:
    """Store the compactions recorded since the last update (resumes where it stopped)."""
    _run(db, target, page_size, rebuild=False)


@read_model.command()
@_options
def rebuild(db: str, target: str | None, page_size: int) -> None:
    """Drop every row and read the whole event log again."""
    _run(db, target, page_size, rebuild=True)
