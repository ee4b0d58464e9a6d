"""`abridged history`: a session's events, as facts a person or a script can read."""

from __future__ import annotations

import json
import re
import textwrap
from datetime import UTC, datetime, timedelta
from typing import Any, cast
from uuid import UUID

import click
from eventsourcing.domain import Aggregate

from abridged.adapters.cli.common import db_option, main, open_store
from abridged.adapters.cli.terminal import safe_echo
from abridged.application.audit import event_facts
from abridged.application.redaction import DefaultRedactor, redact_value
from abridged.domain.errors import SessionError
from abridged.domain.session import Session

EVENT_TYPES = sorted(
    name
    for name, value in vars(Session).items()
    if isinstance(value, type) and issubclass(value, Aggregate.Event) and name[0].isupper()
    if name not in {"Event", "Created"}
)
_AGO = re.compile(r"^(\d+)\s*([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


class Since(click.ParamType):  # type: ignore[type-arg]
    """A moment: ISO 8601 (`2026-11-22`, `2026-11-22T10:00`, UTC unless it says) or a time
    ago (`30m`, `2h`, `7d`)."""

    name = "since"

    def convert(self, value: Any, param: click.Parameter | None, ctx: Any) -> datetime:
        if isinstance(value, datetime):
            return value
        text = str(value).strip()
        ago = _AGO.match(text)
        if ago:
            amount, unit = int(ago.group(1)), _UNITS[ago.group(2)]
            try:
                return datetime.now(UTC) - timedelta(**{unit: amount})
            except OverflowError:
                self.fail(f"{text!r} is further back than any date (year 1)", param, ctx)
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            self.fail(f"{text!r} is neither an ISO 8601 time nor a time ago like 2h", param, ctx)
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@main.command()
@click.argument("session_id", type=click.UUID)
@db_option()
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of text.")
@click.option(
    "--since", type=Since(), default=None, help="Only events at or after: ISO 8601 or 2h."
)
@click.option(
    "--type",
    "types",
    multiple=True,
    type=click.Choice(EVENT_TYPES, case_sensitive=False),
    help="Only events of this type (repeatable).",
)
def history(
    session_id: UUID, db: str, as_json: bool, since: datetime | None, types: tuple[str, ...]
) -> None:
    """Print a session's events: every message, decision and compaction (with its summary),
    oldest first, each with its time. Secrets in the printed text are redacted."""
    app = open_store(db, read_only=True)
    try:
        events = app.history(session_id)
    except SessionError as error:
        raise click.ClickException(str(error)) from None
    wanted = {t.lower() for t in types}
    redactor = DefaultRedactor()
    for e in events:
        if since is not None and e.timestamp < since:
            continue
        if wanted and type(e).__name__.lower() not in wanted:
            continue
        # What a store holds may predate redaction, or its host may have turned it off.
        facts = cast(dict[str, Any], redact_value(redactor, event_facts(e)))
        if as_json:
            safe_echo(json.dumps(facts, ensure_ascii=False, default=str), json_line=True)
            continue
        summary = facts.pop("summary", None)
        detail = "  ".join(
            f"{k}={v}" for k, v in facts.items() if k not in {"version", "event", "time"}
        )
        time = e.timestamp.strftime("%Y-%m-%d %H:%M:%S")
        safe_echo(f"{facts['version']:>6}  {time}  {facts['event']:<24} {detail}", one_line=True)
        if summary is not None:
            safe_echo(textwrap.indent(summary, " " * 8))
