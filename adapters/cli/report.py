"""`abridged report`: a session's chart and audit as one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import click

from abridged.adapters.cli.common import db_option, main, open_store
from abridged.adapters.report import report_html
from abridged.application.auditing import audit_session
from abridged.domain.errors import SessionError


@main.command()
@click.argument("session_id", type=click.UUID)
@db_option()
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="The HTML file to write.",
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
    try:
        out.write_text(report_html(audited), encoding="utf-8")
    except OSError as error:
        raise click.ClickException(f"cannot write {out}: {error}") from None
    verdict = "every decision matches" if audited.ok else f"{len(audited.mismatches)} mismatch(es)"
    click.echo(
        f"wrote {out}: {len(audited.requests)} requests, {len(audited.compactions)} "
        f"compactions; {verdict}"
    )
