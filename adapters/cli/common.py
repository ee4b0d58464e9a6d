"""What every `abridged` command shares: the command group, the store, settings options."""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

import click
import structlog

from abridged.adapters.bootstrap import bootstrap
from abridged.application.service import Sessions
from abridged.domain.errors import InvalidSettingsError
from abridged.domain.settings import CompactionSettings, settings_from

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


def configure_logging(verbose: bool) -> None:
    # Logs go to stderr so stdout stays the command's output (and parseable with --json).
    level = logging.INFO if verbose else logging.WARNING
    structlog.configure(
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
                structlog.dev.ConsoleRenderer(colors=False),
            ],
        )
    )
    library.addHandler(handler)
    library.setLevel(level)


@click.group()
@click.version_option(package_name="abridged")
@click.option("-v", "--verbose", is_flag=True, help="Log each compaction to stderr.")
def main(verbose: bool) -> None:
    """Keep long agent conversations inside the context window, and show how."""
    configure_logging(verbose)


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


def open_store(db: str) -> Sessions:
    try:
        return bootstrap(db)
    except (OSError, ValueError) as error:
        raise click.ClickException(str(error)) from None
