"""`abridged history`: a session's events, as facts a person or a script can read."""

from __future__ import annotations

import json
from uuid import UUID

import click

from abridged.adapters.cli.common import DEFAULT_DB, default_db, main, open_store
from abridged.application.audit import event_facts
from abridged.domain.errors import SessionError


@main.command()
@click.argument("session_id", type=click.UUID)
@click.option("--db", default=default_db, show_default=f"$ABRIDGED_DB or {DEFAULT_DB}")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of text.")
def history(session_id: UUID, db: str, as_json: bool) -> None:
    """Print a session's events: every message, decision and compaction, oldest first."""
    app = open_store(db, read_only=True)
    try:
        events = app.history(session_id)
    except SessionError as error:
        raise click.ClickException(str(error)) from None
    for e in events:
        facts = event_facts(e)
        if as_json:
            click.echo(json.dumps(facts, ensure_ascii=False, default=str))
        else:
            detail = "  ".join(
                f"{k}={v}" for k, v in facts.items() if k not in {"version", "event"}
            )
            click.echo(f"{facts['version']:>6}  {facts['event']:<24} {detail}")
