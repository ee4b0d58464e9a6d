"""What every `abridged` command shares: the command group, the store, settings options."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import structlog
from click.decorators import FC

from abridged.adapters.bootstrap import MEMORY, bootstrap, redact_passwords
from abridged.adapters.http.config import DEFAULT_MAX_BODY_BYTES as API_REQUEST_BYTES
from abridged.adapters.importers import FORMATS
from abridged.adapters.transcripts import Transcript, check_conversation
from abridged.application.service import Sessions
from abridged.domain.errors import InvalidSettingsError, MessageTooLargeError, SessionError
from abridged.domain.inputs import DEFAULT_MAX_MESSAGE_BYTES, first_invalid
from abridged.domain.settings import PRESETS, CompactionSettings, settings_from

DEFAULT_DB = "abridged.sqlite3"
DEFAULT_MODEL = "claude-sonnet-4-5"


def default_db() -> str:
    return os.environ.get("ABRIDGED_DB", DEFAULT_DB)


class _StderrHandler(logging.Handler):
    """Writes the library's log records to whatever stderr is when each is written (a test
    runner swaps it per command)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # a broken stderr must not end the command
            self.handleError(record)


def _renderer() -> structlog.dev.ConsoleRenderer:
    """structlog's console lines, with a traceback as Python prints it. Its default, where
    `rich` is importable, shows each frame's local variables: a request's headers (the
    client's key) and its conversation would reach the log with the first failure."""
    return structlog.dev.ConsoleRenderer(
        colors=False, exception_formatter=structlog.dev.plain_traceback
    )


def configure_logging(verbose: bool) -> None:
    # Logs go to stderr so stdout stays the command's output (and parseable with --json).
    level = logging.INFO if verbose else logging.WARNING
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.StackInfoRenderer(),
            structlog.dev.set_exc_info,
            structlog.processors.TimeStamper(fmt="%Y-%m-%d %H:%M:%S"),
            _renderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
    )
    # The library itself logs through `logging` under "abridged" and is silent unless its
    # host configures it; the command line is such a host.
    library = logging.getLogger("abridged")
    for handler in [h for h in library.handlers if isinstance(h, _StderrHandler)]:
        library.removeHandler(handler)
    handler = _StderrHandler()
    # Rendered by structlog, like the command line's own lines.
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                structlog.processors.TimeStamper(fmt="%Y-%m-%d %H:%M:%S"),
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                _renderer(),
            ],
        )
    )
    library.addHandler(handler)
    library.setLevel(level)


class Interrupted(click.ClickException):
    """Ctrl-C: one line saying what was left, and status 130 (128 + SIGINT), as a shell
    reports an interrupted command, so that a script tells it from a failure (1)."""

    exit_code = 130

    def show(self, file: Any = None) -> None:
        click.echo(self.format_message(), err=True)


PIPE_CLOSED = 141
"""The exit status when the output's reader closed the pipe: 128 + SIGPIPE."""


def _stdout_to_devnull() -> None:
    """Points standard output at the null device, so that the interpreter's last flush of
    what was buffered for a closed pipe fails no more."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class _Commands(click.Group):
    """Runs every command so that a failure is one line on stderr and a non-zero exit; the
    traceback is for `--debug`."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()  # a closed pipe fails here, not in the interpreter's exit
            return result
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:
            raise Interrupted("interrupted; nothing more was done") from None
        except BrokenPipeError:
            # The reader stopped reading (`| head`): stop quietly with 141 (128 + SIGPIPE),
            # as a Unix tool killed by the signal does, and let nothing more reach the pipe.
            _stdout_to_devnull()
            raise click.exceptions.Exit(PIPE_CLOSED) from None
        except Exception as error:
            if ctx.params.get("debug"):
                raise
            raise click.ClickException(one_line(error)) from None


def one_line(error: BaseException) -> str:
    """An error as one readable line: what went wrong, without a traceback."""
    text = redact_passwords(" ".join(str(error).split())) or "no details"
    if isinstance(error, SessionError | OSError):
        return text[:2000]
    return f"{type(error).__name__}: {text}"[:2000]


@click.group(cls=_Commands)
@click.version_option(package_name="abridged")
@click.option("-v", "--verbose", is_flag=True, help="Log each compaction to stderr.")
@click.option("--debug", is_flag=True, help="Show the full traceback of an unexpected error.")
def main(verbose: bool, debug: bool) -> None:
    """Keep long agent conversations inside the context window, and show how."""
    configure_logging(verbose)


def stacked(*decorators: Callable[[FC], FC]) -> Callable[[FC], FC]:
    """The decorators as one, applied as if stacked in the order given (the first on top, so
    its option is listed first)."""

    def apply(f: FC) -> FC:
        for decorator in reversed(decorators):
            f = decorator(f)
        return f

    return apply


def db_option(help: str | None = None) -> Callable[[FC], FC]:
    """`--db`: the session store, by default $ABRIDGED_DB or abridged.sqlite3."""
    return click.option(
        "--db", default=default_db, show_default=f"$ABRIDGED_DB or {DEFAULT_DB}", help=help
    )


max_output_tokens_option = click.option(
    "--max-output-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="Output tokens reserved per request (default: a quarter of the window, at most 8192).",
)


max_message_bytes_option = click.option(
    "--max-message-bytes",
    type=click.IntRange(min=1),
    default=None,
    help="A larger message (its JSON, in UTF-8 bytes) is refused (default: the service's "
    f"{DEFAULT_MAX_MESSAGE_BYTES:,}, or the API's request limit of {API_REQUEST_BYTES:,} for "
    "a transcript holding a larger message, which the API took: a turn of many images).",
)


def recorded_limit(transcript: Transcript, given: int | None) -> tuple[int, str | None]:
    """The largest message a run over a recorded `transcript` takes, checked
    (`check_conversation`, which raises `TranscriptError`), and a note when it is not the
    service's default: `given`, else that default, or the API's request limit when the
    transcript holds a larger message (the API took it: the results of a turn of many
    screenshots, joined in one message)."""
    if given is not None:
        check_conversation(transcript, given)
        return given, None
    found = first_invalid(transcript.messages, DEFAULT_MAX_MESSAGE_BYTES)
    if found is None:
        return DEFAULT_MAX_MESSAGE_BYTES, None  # checked: not read a second time
    if isinstance(found[1], MessageTooLargeError):
        check_conversation(transcript, API_REQUEST_BYTES)
        return API_REQUEST_BYTES, (
            f"a message of {found[1].size:,} bytes is over the service's default of "
            f"{DEFAULT_MAX_MESSAGE_BYTES:,}: this run takes messages of up to "
            f"{API_REQUEST_BYTES:,} bytes, the API's request limit (--max-message-bytes "
            "chooses another)"
        )
    check_conversation(transcript, DEFAULT_MAX_MESSAGE_BYTES)  # raises, naming the line
    return DEFAULT_MAX_MESSAGE_BYTES, None


def transcript_format_option(help: str) -> Callable[[FC], FC]:
    """`--format` (into `transcript_format`): a transcript format, or auto."""
    return click.option(
        "--format",
        "transcript_format",
        type=click.Choice(["auto", *FORMATS]),
        default="auto",
        show_default=True,
        help=help,
    )


def settings_options(preset_help: str, set_help: str) -> Callable[[FC], FC]:
    """`--preset` and `--set` (into `preset` and `overrides`), read by
    `settings_option_values`."""
    return stacked(
        click.option(
            "--preset",
            type=click.Choice(list(PRESETS)),
            default="default",
            show_default=True,
            help=preset_help,
        ),
        click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help=set_help),
    )


def settings_option_values(preset: str, overrides: tuple[str, ...]) -> CompactionSettings:
    values: dict[str, Any] = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--set")
        try:
            values[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            values[key.strip()] = raw  # a bare word such as name-only
    try:
        return settings_from(preset, values)
    except (InvalidSettingsError, TypeError) as error:
        raise click.BadParameter(str(error), param_hint="--set") from None


def _check_sqlite_store(path: Path) -> None:
    # Opened read-only here, because opening it as a store would change it (WAL mode, tables).
    try:
        with contextlib.closing(
            sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        ) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    except sqlite3.DatabaseError as error:
        if "not a database" in str(error) or "malformed" in str(error):
            raise click.ClickException(f"{path} is not a session store: {error}") from None
        # Not the file's content: its folder or disk (SQLite in WAL mode writes a `-shm`
        # file beside the store even to read it).
        raise click.ClickException(
            f"cannot read the session store {path}: {error}; check that you may write to "
            f"its folder ({path.parent}) and that the disk is not full"
        ) from None
    if "stored_events" not in tables:
        raise click.ClickException(f"{path} is a SQLite database but holds no abridged sessions")


def open_store(
    db: str, *, read_only: bool = False, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
) -> Sessions:
    """The service on the store `db`. A reader (`read_only`) never creates anything: a SQLite
    file must exist, and no table is created in any store."""
    if read_only and db != MEMORY and not db.startswith(("postgresql://", "postgres://")):
        path = Path(db).expanduser()
        if not path.exists():
            raise click.ClickException(f"no session store at {db}: the file does not exist")
        if not path.is_file():
            raise click.ClickException(f"{db} is not a session store file")
        _check_sqlite_store(path)
    try:
        return bootstrap(
            db,
            env={"CREATE_TABLE": "n"} if read_only else None,
            max_message_bytes=max_message_bytes,
        )
    except (OSError, ValueError, SessionError) as error:
        raise click.ClickException(one_line(error)) from None
