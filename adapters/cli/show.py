"""`abridged show`: a session's current context, part by part, like a `/status`."""

from __future__ import annotations

import json
from uuid import UUID

import attrs
import click

from abridged.adapters.cli.common import db_option, main, open_store
from abridged.application.notices import breakdown_of
from abridged.domain.errors import SessionError


@main.command()
@click.argument("session_id", type=click.UUID)
@db_option()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def show(session_id: UUID, db: str, as_json: bool) -> None:
    """Print what the session's next request holds: system prompt, tools, summaries and kept
    messages, each with its tokens, against the window, threshold and budget."""
    app = open_store(db, read_only=True)
    try:
        session = app.session(session_id)
    except SessionError as error:
        raise click.ClickException(str(error)) from None
    b = breakdown_of(session)
    if as_json:
        record = attrs.asdict(b) | {"session": str(session_id), "model": session.model}
        record |= {"total": b.total, "percent_of_window": b.percent_of_window}
        click.echo(json.dumps(record))
        return
    width = len(f"{max(b.window, b.total):,}")

    def row(label: str, tokens: int, note: str = "") -> None:
        share = 100 * tokens / b.window
        click.echo(f"  {label:<16} {tokens:>{width},} tokens  {share:5.1f}%  {note}".rstrip())

    click.echo(
        f"session {session_id} ({session.model}): {b.message_count} messages, "
        f"{b.generation} compaction(s)"
    )
    row("request overhead", b.overhead)
    row("system prompt", b.system)
    row("tools", b.tools, f"{len(session.tools)} tool(s)")
    row("summaries", b.summary, f"{b.summary_chunks} chunk(s)")
    row("facts ledger", b.ledger, "exact strings kept through compactions")
    kept = f"{b.kept_messages} message(s) from message {b.kept_from + 1}"
    if b.pruned_blocks:
        kept += f", {b.pruned_blocks} block(s) shown reduced"
    row("kept messages", b.messages, kept)
    click.echo(
        f"  {'total':<16} {b.estimate:>{width},} tokens  {b.percent_of_window:5.1f}%  "
        f"(calibration x{b.calibration:g})"
    )
    click.echo(
        f"  window {b.window:,}  threshold {b.threshold:,}  budget {b.budget:,} "
        f"(window minus reserved output)"
    )
