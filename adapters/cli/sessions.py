"""`abridged sessions`: the sessions of a store, newest first."""

from __future__ import annotations

import json
from typing import Any

import click

from abridged.adapters.cli.common import db_option, main, open_store
from abridged.adapters.cli.terminal import safe_echo
from abridged.application.management import SessionInfo
from abridged.application.service import Sessions
from abridged.domain.errors import SessionError


def _pairs(items: tuple[str, ...]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--meta")
        pairs[key.strip()] = value
    return pairs


def _row(app: Sessions, info: SessionInfo) -> dict[str, Any]:
    session = app.session(info.id)
    return {
        "id": str(info.id),
        "model": info.model,
        "messages": session.message_count,
        "compactions": session.generation,
        "context_status": "summarized" if session.summaries else "full",
        "created_at": info.created_at.isoformat(),
        "last_activity": info.last_activity.isoformat(),
        "metadata": dict(info.metadata),
        "tags": list(info.tags),
    }


@main.command()
@db_option()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per line.")
@click.option("--tag", "tags", multiple=True, help="Only sessions with this tag (repeatable).")
@click.option(
    "--meta", "meta", multiple=True, help="Only sessions whose metadata has KEY=VALUE (repeatable)."
)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 1_000))
@click.option("--cursor", default=None, help="Continue after an earlier page (printed last).")
def sessions(
    db: str,
    as_json: bool,
    tags: tuple[str, ...],
    meta: tuple[str, ...],
    limit: int,
    cursor: str | None,
) -> None:
    """List the store's sessions, newest first: id, model, messages, compactions, last
    activity. Deleted sessions are not listed."""
    app = open_store(db, read_only=True)  # a mistyped --db lists nothing, creates nothing
    try:
        page = app.list_sessions(metadata=_pairs(meta), tags=tags, limit=limit, cursor=cursor)
        rows = [_row(app, info) for info in page.sessions]
    except SessionError as error:
        raise click.ClickException(str(error)) from None
    for row in rows:
        if as_json:
            safe_echo(json.dumps(row, ensure_ascii=False), json_line=True)
        else:
            labels = " ".join(
                [*(f"#{t}" for t in row["tags"]), *(f"{k}={v}" for k, v in row["metadata"].items())]
            )
            line = (
                f"{row['id']}  {row['model']:<20} {row['messages']:>6} messages "
                f"{row['compactions']:>4} compactions  {row['last_activity'][:19]}  {labels}"
            )
            safe_echo(line.rstrip(), one_line=True)
    if page.next_cursor is not None:
        click.echo(f"more: --cursor {page.next_cursor}", err=True)
