"""`abridged replay` and `abridged demo`: a recorded or generated session, fed as if live."""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import attrs
import click

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.bootstrap import MEMORY, redacted
from abridged.adapters.cli.common import (
    DEFAULT_MODEL,
    Interrupted,
    db_option,
    main,
    max_message_bytes_option,
    max_output_tokens_option,
    open_store,
    recorded_limit,
    settings_option_values,
    settings_options,
    stacked,
    transcript_format_option,
)
from abridged.adapters.cli.files import dump_folder, write_private
from abridged.adapters.cli.progress import progress, reading
from abridged.adapters.cli.stdin import transcript_file
from abridged.adapters.recorded import is_reply
from abridged.adapters.transcripts import (
    Transcript,
    TranscriptError,
    load_transcript,
)
from abridged.application.service import PreparedRequest, Sessions
from abridged.domain.errors import ContextOverflowError, InvalidSettingsError, SessionError
from abridged.domain.inputs import check_tool_definitions
from abridged.domain.settings import (
    CompactionSettings,
    Limits,
    context_window_for,
    parse_model_windows,
)

EXIT_OVERFLOW = 3


@attrs.frozen
class ReplayResult:
    session_id: UUID
    messages: int
    requests: int
    compactions: int
    peak_tokens: int
    overflows: int


@attrs.frozen
class ReplayRun:
    """What `replay` and `demo` share: where and how to feed a session, from their options."""

    window: int | None
    max_output_tokens: int | None
    db: str
    dump_requests: Path | None
    as_json: bool
    settings: CompactionSettings
    max_message_bytes: int | None = None
    """None: the service's default, or the API's request limit for a recorded transcript
    holding a larger message (`recorded_limit`)."""


_run_options = stacked(
    click.option(
        "--window",
        type=click.IntRange(min=1),
        default=None,
        help="Context window in tokens (default: the model's, from its name; 32000 for the demo).",
    ),
    max_output_tokens_option,
    db_option(f"Where the session's events go: a SQLite file, a postgresql:// URL, or {MEMORY}."),
    click.option(
        "--dump-requests",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Write each request body as DIR/0001.json, DIR/0002.json, …",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of text."),
    max_message_bytes_option,
    settings_options(
        "Compaction settings to start from.",
        "Change one setting (repeatable), e.g. --set keep_recent_turns=2 "
        '--set tool_policies=\'{"bash": "keep"}\'.',
    ),
)


def _replay_options(command: Callable[..., None]) -> Callable[..., None]:
    """The shared options, handed to `command` as one `ReplayRun` (its first argument)."""

    @functools.wraps(command)
    def gathered(
        *,
        window: int | None,
        max_output_tokens: int | None,
        db: str,
        dump_requests: Path | None,
        as_json: bool,
        max_message_bytes: int | None,
        preset: str,
        overrides: tuple[str, ...],
        **rest: Any,
    ) -> None:
        settings = settings_option_values(preset, overrides)
        run = ReplayRun(
            window, max_output_tokens, db, dump_requests, as_json, settings, max_message_bytes
        )
        command(run, **rest)

    return _run_options(gathered)


@main.command()
@click.argument("transcript", type=click.Path(dir_okay=False, path_type=Path))
@_replay_options
@transcript_format_option(
    "The transcript's format: abridged's JSONL, a Claude Code session log, OpenAI "
    "chat-completions messages, or an Anthropic request body; auto detects it from the content."
)
def replay(run: ReplayRun, transcript: Path, transcript_format: str) -> None:
    """Feed a recorded TRANSCRIPT through a session as if live: abridged's JSONL (one message
    per line), a Claude Code session log (~/.claude/projects/**/*.jsonl), OpenAI
    chat-completions messages or an Anthropic request body; `-` reads standard input.

    Before each assistant message, the request the model would have received is prepared
    (compacted when needed), checked against the budget, printed and optionally dumped.
    """
    try:
        with transcript_file(transcript) as (path, name), reading(path, Path(name).name) as advance:
            loaded = load_transcript(path, transcript_format, advance, source=name)
        windows = parse_model_windows(os.environ.get("ABRIDGED_MODEL_WINDOWS", ""))
    except (TranscriptError, InvalidSettingsError) as error:
        raise click.ClickException(str(error)) from None
    for note in loaded.notes:
        click.echo(f"note: {note}", err=True)
    window = context_window_for(loaded.model or DEFAULT_MODEL, run.window, windows)
    _run(loaded, attrs.evolve(run, window=window))


@main.command()
@_replay_options
@click.option("--seed", default=7, show_default=True, help="Varies the generated session.")
@click.option(
    "--save-transcript",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the generated session as a transcript `replay` reads: FILE (one message "
    "per line) and, beside it, its .meta.json (system prompt, model, tools).",
)
def demo(run: ReplayRun, seed: int, save_transcript: Path | None) -> None:
    """Replay a realistic coding-agent session generated here (no data or API key needed)."""
    from abridged.adapters.demo import demo_transcript

    transcript = demo_transcript(seed=seed)
    if save_transcript is not None:
        _save(transcript, save_transcript, run.db)
    _run(transcript, attrs.evolve(run, window=run.window or 32_000))


def _save(transcript: Transcript, path: Path, store: str) -> None:
    """`transcript` as `path` and its `.meta.json`, each written whole or not at all."""
    lines = "".join(json.dumps(m.to_wire(), ensure_ascii=False) + "\n" for m in transcript.messages)
    meta = {"system": transcript.system, "model": transcript.model, "tools": list(transcript.tools)}
    write_private(path.with_name(f"{path.stem}.meta.json"), json.dumps(meta, indent=1), store=store)
    write_private(path, lines, store=store)


def _run(transcript: Transcript, run: ReplayRun) -> None:
    window = run.window
    assert window is not None  # each command chose it
    reserve = run.max_output_tokens or min(8192, max(1, window // 4))
    max_message_bytes = _check_whole(transcript, run.max_message_bytes)
    try:
        # Checked before the store opens, so a refused start leaves no store behind either.
        check_tool_definitions(transcript.tools)
        Limits(window, reserve, run.settings)
    except InvalidSettingsError as error:
        raise click.UsageError(str(error)) from None
    except SessionError as error:
        raise click.ClickException(f"{transcript.source}: {error}") from None
    if run.dump_requests is not None:
        dump_folder(run.dump_requests)  # refused before any store is made
    fresh = _new_store_file(run.db)
    app = open_store(run.db, max_message_bytes=max_message_bytes)
    try:
        session_id = app.start_session(
            model=transcript.model or DEFAULT_MODEL,
            context_window=window,
            max_output_tokens=reserve,
            system=transcript.system,
            tools=transcript.tools,
            settings=run.settings,
        )
    except BaseException as error:
        # Nothing was written to an existing store; a store this run made is taken away.
        _discard(app, fresh)
        if isinstance(error, InvalidSettingsError):
            raise click.UsageError(str(error)) from None
        if isinstance(error, ContextOverflowError):
            # The system prompt and tools alone leave no room for any request.
            click.echo(f"NOT SENT: {error}", err=True)
            raise SystemExit(EXIT_OVERFLOW) from None
        if isinstance(error, SessionError):
            raise click.ClickException(f"{transcript.source}: {error}") from None
        raise
    result = _feed(app, session_id, transcript, run.dump_requests, run.as_json)
    shown_db = redacted(run.db)  # never a PostgreSQL password on the screen or in a log
    summary = attrs.asdict(result) | {"session_id": str(result.session_id), "db": shown_db}
    summary["peak_percent"] = round(100 * result.peak_tokens / window, 1)
    if run.as_json:
        click.echo(json.dumps({"summary": summary}))
    else:
        click.echo(
            f"session {result.session_id}: {result.messages} messages, {result.requests} "
            f"requests, {result.compactions} compactions, peak {result.peak_tokens:,} tokens "
            f"({summary['peak_percent']}% of {window:,}); events in {shown_db}"
        )
        if run.db != MEMORY:
            click.echo(f"audit it: abridged history {result.session_id} --db {shown_db}")
    if result.overflows:
        raise SystemExit(EXIT_OVERFLOW)


def _new_store_file(db: str) -> Path | None:
    """The SQLite file `db` names when this run is about to create it, else `None`."""
    if db == MEMORY or db.startswith(("postgresql://", "postgres://")):
        return None
    path = Path(db).expanduser()
    return None if path.exists() else path


def _discard(app: Sessions, fresh: Path | None) -> None:
    """Closes the store and, when this run created it (`fresh`), removes its files."""
    with contextlib.suppress(Exception):
        app.close()
    if fresh is not None:
        for part in (fresh, *(fresh.with_name(fresh.name + end) for end in ("-wal", "-shm"))):
            with contextlib.suppress(OSError):
                part.unlink()


def _feed(
    app: Sessions,
    session_id: UUID,
    transcript: Transcript,
    dump_requests: Path | None,
    as_json: bool,
) -> ReplayResult:
    requests = peak = overflows = 0
    compactions = 0
    numbered = _numbered(transcript)
    total = len(transcript.messages)
    for index, (line, message) in enumerate(
        progress(numbered, total=total, description="replaying", unit="msg")
    ):
        try:
            if is_reply(index, message):
                requests += 1
                try:
                    prepared = app.prepare_request(session_id)
                except ContextOverflowError as error:
                    overflows += 1
                    _report_overflow(requests, line, error, as_json)
                else:
                    peak = max(peak, prepared.context.estimate)
                    compactions = prepared.compactions_so_far
                    _report(requests, line, prepared, dump_requests, as_json)
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
        except SessionError as error:
            where = f"line {line}" if line > 0 else f"message {-line}"
            raise click.ClickException(
                f"{transcript.source} {where}: {error} (session {session_id} holds the "
                "messages before it)"
            ) from None
        except KeyboardInterrupt:
            where = f"line {line}" if line > 0 else f"message {-line}"
            raise Interrupted(
                f"interrupted at {transcript.source} {where}: session {session_id} holds the "
                "messages before it"
            ) from None
    return ReplayResult(
        session_id, len(transcript.messages), requests, compactions, peak, overflows
    )


def _check_whole(transcript: Transcript, given: int | None) -> int:
    """Refuses a transcript a session would refuse part way, before any session exists; the
    largest message the run takes (`recorded_limit`, with its note on standard error)."""
    try:
        limit, raised = recorded_limit(transcript, given)
    except TranscriptError as error:
        said = str(error).replace("(max_message_bytes)", "(--max-message-bytes)")
        raise click.ClickException(f"{said}; nothing was recorded") from None
    if raised is not None:
        click.echo(f"note: {raised}", err=True)
    return limit


def _numbered(transcript: Transcript) -> Iterator[tuple[int, Any]]:
    """Each message with its file line, or minus its position for a generated transcript."""
    lines = transcript.line_numbers or range(-1, -len(transcript.messages) - 1, -1)
    yield from zip(lines, transcript.messages, strict=True)


def _report(
    number: int, line: int, prepared: PreparedRequest, dump: Path | None, as_json: bool
) -> None:
    context = prepared.context
    if dump is not None:
        body = render_request(context, model=prepared.model, max_tokens=prepared.max_tokens)
        write_private(dump / f"{number:04d}.json", json.dumps(body, ensure_ascii=False, indent=1))
    percent = round(100 * context.estimate / context.window, 1)
    compaction = prepared.compaction
    if as_json:
        record: dict[str, Any] = {
            "request": number,
            "line": line if line > 0 else None,
            "tokens": context.estimate,
            "raw_tokens": context.raw_estimate,
            "window": context.window,
            "percent": percent,
            "messages": len(context.messages),
            "compactions": prepared.compactions_so_far,
            "compacted": attrs.asdict(compaction) if compaction else None,
        }
        click.echo(json.dumps(record))
        return
    where = f"line {line:>4}" if line > 0 else f"message {-line:>4}"
    text = (
        f"request {number:>4} ({where}): {context.estimate:>7,} tokens "
        f"{percent:5.1f}% of window, {len(context.messages):>4} messages, "
        f"compactions {prepared.compactions_so_far}"
    )
    if compaction:
        text += (
            f"  <- compacted ({compaction.strategy}): {compaction.messages_summarized} messages "
            f"summarized, {compaction.tokens_before:,} -> {compaction.tokens_after:,} tokens"
        )
    click.echo(text)


def _report_overflow(number: int, line: int, error: ContextOverflowError, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"request": number, "line": line, "error": str(error)}))
    else:
        where = f"line {line:>4}" if line > 0 else f"message {-line:>4}"
        click.echo(f"request {number:>4} ({where}): NOT SENT: {error}")
