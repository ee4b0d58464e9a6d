"""`abridged report`: a session's chart and audit as one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import click

from abridged.adapters.cli.common import db_option, main, open_store
from abridged.adapters.cli.files import write_private
from abridged.adapters.report import report_html
from abridged.application.auditing import audit_session
from abridged.domain.errors import SessionError


@main.command()
@click.argument("session_id", type=click.UUID)
@db_option()
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The HTML file to write (0600; never a link, a SQLite file or the store).",
)
def report(session_id: UUID, db: str, out: Path) -> None:
    """Write an HTML report of a session: context tokens per request (window, threshold,
    prunes, compactions, cache reads and writes) and the audit, summaries expandable.

    The page needs no network to open: the chart's JavaScript is inside it."""
    app = open_store(db, read_only=True)
    try:
        audited = audit_session(app, session_id)
    except SessionError as error:
        raise click.ClickException(str(error)) from None
    write_private(out, report_html(audited), store=db)
    verdict = "every decision matches" if audited.ok else f"{len(audited.mismatches)} mismatch(es)"
    click.echo(
        f"wrote {out}: {len(audited.requests)} requests, {len(audited.compactions)} "
        f"compactions; {verdict}"
    )
