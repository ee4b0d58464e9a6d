"""The one place where adapters are wired into the application."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from eventsourcing.persistence import PersistenceError

from abridged.application.async_ports import AsyncChatModel, AsyncSummarizer
from abridged.application.async_service import AsyncSessions
from abridged.application.guard import BreakerSettings
from abridged.application.locks import CompactionLocks
from abridged.application.ports import (
    ChatModel,
    CompactionHooks,
    ContextProvider,
    Metrics,
    Redactor,
    Summarizer,
    TokenCounter,
)
from abridged.application.service import Sessions
from abridged.domain.capabilities import ModelCapabilities
from abridged.domain.errors import StoreError
from abridged.domain.inputs import DEFAULT_MAX_MESSAGE_BYTES

MEMORY = ":memory:"


def persistence_env(db: str | Path | None) -> dict[str, str]:
    """The eventsourcing persistence settings for a store location.

    `None` or ":memory:" keeps events in memory; `postgresql://user:password@host:port/db`
    (optionally `?schema=name`) uses PostgreSQL, where what the URL leaves out (host, port,
    user, password) comes from libpq's own defaults: `PGHOST`, `PGPORT`, `PGUSER`,
    `PGPASSWORD`, the `~/.pgpass` file; anything else is a SQLite file path (whose
    commits' durability `ABRIDGED_SQLITE_SYNCHRONOUS` sets: `abridged.adapters.sqlite_store`).
    Raises `ValueError` for a PostgreSQL URL without a database name, `FileNotFoundError`
    when a SQLite file's folder does not exist.
    """
    if db is None or str(db) == MEMORY:
        return {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    location = str(db)
    if location.startswith(("postgresql://", "postgres://")):
        return _postgres_env(location)
    path = Path(location).expanduser()
    if path.parent and not path.parent.exists():
        raise FileNotFoundError(f"the folder for the session store does not exist: {path.parent}")
    # eventsourcing's SQLite module, with the durability of a commit as a setting
    # (`ABRIDGED_SQLITE_SYNCHRONOUS`, see `abridged.adapters.sqlite_store`).
    return {"PERSISTENCE_MODULE": "abridged.adapters.sqlite_store", "SQLITE_DBNAME": str(path)}


DEFAULT_POOL_SIZE = "1"
"""Connections each process keeps open to PostgreSQL (`POSTGRES_POOL_SIZE`)."""
DEFAULT_MAX_OVERFLOW = "9"
"""Connections a process may open beyond them while it is busy (`POSTGRES_MAX_OVERFLOW`)."""


def _postgres_env(url: str) -> dict[str, str]:
    parts = urlsplit(url)
    dbname = unquote(parts.path.lstrip("/"))
    if not dbname:
        raise ValueError(f"the PostgreSQL URL names no database: {redacted(url)!r}")
    env = {
        # eventsourcing's PostgreSQL module, with timeouts and safe table creation.
        "PERSISTENCE_MODULE": "abridged.adapters.stores",
        "POSTGRES_CONNECT_TIMEOUT": "5",
        # Inserts through eventsourcing's database function, not a psycopg pipeline: a
        # pipelined insert of about 8 MB or more never returns (pipeline.sync() deadlocks).
        "POSTGRES_ENABLE_DB_FUNCTIONS": "y",
        "POSTGRES_DBNAME": dbname,
        # Empty: libpq's defaults apply (abridged.adapters.stores drops empty values).
        "POSTGRES_HOST": parts.hostname or "",
        "POSTGRES_PORT": str(parts.port or ""),
        "POSTGRES_USER": unquote(parts.username or ""),
        "POSTGRES_PASSWORD": unquote(parts.password or ""),
        # Few connections per process, so that many processes share one server: see
        # docs/security.md, "Connections" (the environment's values win).
        "POSTGRES_POOL_SIZE": os.environ.get("POSTGRES_POOL_SIZE") or DEFAULT_POOL_SIZE,
        "POSTGRES_MAX_OVERFLOW": os.environ.get("POSTGRES_MAX_OVERFLOW") or DEFAULT_MAX_OVERFLOW,
    }
    schema = parse_qs(parts.query).get("schema")
    if schema:
        env["POSTGRES_SCHEMA"] = schema[0]
    return env


def bootstrap(
    db: str | Path | None = None,
    *,
    counter: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    chat_model: ChatModel | None = None,
    hooks: CompactionHooks | None = None,
    context_provider: ContextProvider | None = None,
    metrics: Metrics | None = None,
    env: Mapping[str, str] | None = None,
    model_windows: Mapping[str, int] | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    summarizer_breaker: BreakerSettings | None = None,
    model_capabilities: Mapping[str, ModelCapabilities | Mapping[str, Any]] | None = None,
    redactor: Redactor | None = None,
) -> Sessions:
    """A ready `Sessions` service: tiktoken counts, extractive summaries (unless another
    summarizer is given), the given store, and any chat model, hooks, context provider or
    metrics (`abridged.adapters.opentelemetry.OpenTelemetryMetrics`). `report_overflow`
    reads the Anthropic SDK's errors. `model_windows` adds context windows by model name to
    the built-in table, `model_capabilities` rows to the table of what each model checks and
    accepts (`abridged.domain.capabilities`).

    `max_message_bytes` and `summarizer_breaker` bound messages and summarizer calls (see
    `Sessions`). `redactor` replaces secrets in everything derived from the messages
    (default `DefaultRedactor()`: add patterns with `DefaultRedactor(extra=[...])`, or pass
    `NoRedaction()`). Raises `StoreError` when the store cannot be opened (not a database,
    unreachable, ...)."""
    from abridged.adapters.anthropic.errors import translate_error
    from abridged.adapters.erasure import erase_stored_events
    from abridged.adapters.summarizers import ExtractiveSummarizer
    from abridged.adapters.token_counters import default_token_counter

    counter = counter or default_token_counter()
    summarizer = summarizer or ExtractiveSummarizer(counter)
    settings = {**persistence_env(db), **(env or {})}
    try:
        return Sessions(
            counter=counter,
            summarizer=summarizer,
            chat_model=chat_model,
            hooks=hooks,
            context_provider=context_provider,
            metrics=metrics,
            read_provider_error=translate_error,
            erase_events=erase_stored_events,
            env=settings,
            model_windows=model_windows,
            model_capabilities=model_capabilities,
            locks=compaction_locks(settings),
            max_message_bytes=max_message_bytes,
            summarizer_breaker=summarizer_breaker,
            redactor=redactor,
        )
    except (PersistenceError, sqlite3.Error) as error:
        raise StoreError(f"cannot open the session store {redacted(db)}: {error}") from error


def bootstrap_async(
    db: str | Path | None = None,
    *,
    counter: TokenCounter | None = None,
    summarizer: AsyncSummarizer | Summarizer | None = None,
    chat_model: AsyncChatModel | None = None,
    hooks: CompactionHooks | None = None,
    context_provider: ContextProvider | None = None,
    metrics: Metrics | None = None,
    env: Mapping[str, str] | None = None,
    model_windows: Mapping[str, int] | None = None,
    model_capabilities: Mapping[str, ModelCapabilities | Mapping[str, Any]] | None = None,
    redactor: Redactor | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    summarizer_breaker: BreakerSettings | None = None,
) -> AsyncSessions:
    """`bootstrap` for asyncio hosts: a ready `AsyncSessions` (pass an
    `AsyncAnthropicChatModel` and, for model-written summaries, an `AsyncAnthropicSummarizer`
    from `abridged.adapters.anthropic.async_clients`). It takes what `bootstrap` takes and
    wires the same: `report_overflow` reads the Anthropic SDK's errors, and
    `delete_session(..., erase=True)` erases on SQLite and PostgreSQL. Raises `StoreError`
    when the store cannot be opened."""
    from abridged.adapters.anthropic.errors import translate_error
    from abridged.adapters.erasure import erase_stored_events
    from abridged.adapters.summarizers import ExtractiveSummarizer
    from abridged.adapters.token_counters import default_token_counter

    counter = counter or default_token_counter()
    settings = {**persistence_env(db), **(env or {})}
    try:
        return AsyncSessions(
            counter=counter,
            summarizer=summarizer or ExtractiveSummarizer(counter),
            chat_model=chat_model,
            hooks=hooks,
            context_provider=context_provider,
            metrics=metrics,
            read_provider_error=translate_error,
            erase_events=erase_stored_events,
            env=settings,
            model_windows=model_windows,
            model_capabilities=model_capabilities,
            locks=compaction_locks(settings),
            redactor=redactor,
            max_message_bytes=max_message_bytes,
            summarizer_breaker=summarizer_breaker,
        )
    except (PersistenceError, sqlite3.Error) as error:
        raise StoreError(f"cannot open the session store {redacted(db)}: {error}") from error


def compaction_locks(env: Mapping[str, str]) -> CompactionLocks | None:
    """Advisory locks when the store is PostgreSQL (processes share it); else `None`, the
    service's process-local locks."""
    if "POSTGRES_DBNAME" not in env:
        return None
    from abridged.adapters.postgres_locks import AdvisoryLocks

    return AdvisoryLocks(env)


def redacted(db: str | Path | None) -> str:
    """A store location fit for a message: a PostgreSQL URL without its password."""
    return redact_passwords(str(db if db is not None else MEMORY))


_URL_PASSWORD = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s/@:]*:)[^\s/@]*@")
_CONNINFO_PASSWORD = re.compile(r"(?i)(\bpassword\s*=\s*)('[^']*'|\S+)")


def redact_passwords(text: str) -> str:
    """`text` with the password of every URL (`scheme://user:password@…`) and libpq
    `password=…` in it replaced by `***`: for messages and logs."""
    return _CONNINFO_PASSWORD.sub(r"\1***", _URL_PASSWORD.sub(r"\1***@", text))
