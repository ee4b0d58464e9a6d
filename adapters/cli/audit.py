"""`abridged audit`: every recorded decision re-derived from the events, with a verdict.

The re-derivation is `abridged.application.auditing`; this module only prints it.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import attrs
import click

from abridged.adapters.cli.common import db_option, main, open_store
from abridged.adapters.cli.progress import progress
from abridged.application.auditing import SessionAudit, audit_session
from abridged.application.compactions import CompactionRecord, session_ids
from abridged.application.redaction import DefaultRedactor, redact_value
from abridged.domain.errors import SessionError

EXIT_MISMATCH = 4


@main.command()
@click.argument("session_ids_given", metavar="[SESSION]...", nargs=-1, type=click.UUID)
@db_option()
@click.option("--all", "every", is_flag=True, help="Audit every session in the store.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of text.")
@click.option(
    "--checks", is_flag=True, help="Print every decision checked, not only the mismatches."
)
def audit(
    session_ids_given: tuple[UUID, ...], db: str, every: bool, as_json: bool, checks: bool
) -> None:
    """Replay sessions' events and re-derive every recorded decision (prune, threshold hit,
    compaction, suppression, reasoning downgrade) from the state before it.

    Prints one line per compaction and a verdict per session. Also checks the stored
    events' hash chain. Exits with status 4 when any recorded decision differs from the one
    its settings imply, or a stored event was altered, deleted or moved, naming the event.
    """
    if not session_ids_given and not every:
        raise click.UsageError("name a SESSION, or pass --all")
    app = open_store(db, read_only=True)
    targets = list(session_ids_given)
    if every:
        targets += [s for s in session_ids(app) if s not in targets]
    failed = []
    for session_id in progress(targets, description="auditing", unit="session"):
        try:
            result = audit_session(app, session_id)
        except SessionError as error:
            raise click.ClickException(str(error)) from None
        _print(result, as_json, checks)
        if not result.ok:
            failed.append(result)
    if failed:
        chain = failed[0].chain
        note = ""
        if chain is not None and not chain.ok:
            version, event, note = chain.broken_at, chain.event, ": stored history altered"
        else:
            first = failed[0].mismatches[0]
            version, event = first.version, first.event
        click.echo(
            f"audit failed: {len(failed)} session(s) with decisions that do not match or an "
            f"altered history; first: session {failed[0].session_id} version {version} "
            f"({event}){note}",
            err=True,
        )
        raise SystemExit(EXIT_MISMATCH)


def _print(result: SessionAudit, as_json: bool, checks: bool) -> None:
    shown = result.findings if checks else result.mismatches
    if as_json:
        for finding in shown:
            click.echo(_json({"type": "check", "session": result.session_id, **_d(finding)}))
        for line in result.compactions:
            click.echo(_json({"type": "compaction", "session": result.session_id, **_d(line)}))
        click.echo(
            _json(
                {
                    "type": "verdict",
                    "session": result.session_id,
                    "ok": result.ok,
                    "events": result.events,
                    "decisions_checked": len(result.findings),
                    "mismatches": [f"{m.version} {m.event}" for m in result.mismatches],
                    **({"chain": _d(result.chain)} if result.chain is not None else {}),
                }
            )
        )
        return
    click.echo(f"session {result.session_id} ({result.model}, {result.events} events)")
    for finding in shown:
        verdict = "ok      " if finding.matches else "MISMATCH"
        detail = _REDACTOR.redact(finding.detail)
        if finding.correlation_id is not None:
            detail += f"  [correlation {finding.correlation_id}]"
        click.echo(f"  {verdict} v{finding.version:<6} {finding.event:<24} {detail}")
    for line in result.compactions:
        click.echo("  " + compaction_text(line))
    if result.chain is not None:
        click.echo("  " + result.chain.describe())
    if result.ok:
        click.echo(f"  every recorded decision matches ({len(result.findings)} checked)")
    elif result.mismatches:
        click.echo(f"  {len(result.mismatches)} of {len(result.findings)} decisions DO NOT MATCH")


def compaction_text(line: CompactionRecord) -> str:
    """One compaction in one line: what a person scanning an audit needs."""
    usage = (
        f"{line.summarizer_input_tokens:,} in / {line.summarizer_output_tokens:,} out"
        if line.summarizer_input_tokens or line.summarizer_output_tokens
        else "no usage reported"
    )
    return (
        f"compaction {line.generation} (v{line.version}, {line.trigger}): "
        f"{line.tokens_before:,} -> {line.tokens_after:,} tokens; "
        f"{line.messages_summarized} messages summarized "
        f"(messages {line.first_position + 1}-{line.last_position + 1}), "
        f"{line.turns_kept} turns kept; summary {line.summary_tokens:,} of "
        f"{line.summary_max_tokens:,} tokens ({line.strategy}); "
        f"ledger {line.ledger_entries} entries, {line.ledger_tokens:,} tokens; "
        f"summarizer {line.summarizer} ({usage}); fallback {line.fallback or 'none'}"
    )


def _d(value: Any) -> dict[str, Any]:
    return attrs.asdict(value)


def _json(record: dict[str, Any]) -> str:
    # Summaries and reasons quote the conversation: secrets in them are redacted.
    return json.dumps(redact_value(_REDACTOR, record), ensure_ascii=False, default=str)


_REDACTOR = DefaultRedactor()
