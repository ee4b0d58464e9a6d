"""The one place where adapters are wired into the application."""

from __future__ import annotations

import functools
import os
import re
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

import attrs
from eventsourcing.persistence import PersistenceError

from abridged.application.async_ports import AsyncChatModel, AsyncSummarizer
from abridged.application.async_service import MAX_WORKERS, AsyncSessions
from abridged.application.locks import CompactionLocks
from abridged.application.options import SessionsOptions, options_of
from abridged.application.ports import (
    ChatModel,
    ProviderError,
    Summarizer,
    TokenCounter,
)
from abridged.application.service import Sessions
from abridged.domain.errors import StoreError

MEMORY = ":memory:"

T = TypeVar("T")


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
    options: SessionsOptions | None = None,
    **keywords: Any,
) -> Sessions:
    """A ready `Sessions` service on the store at `db`: tiktoken counts, extractive summaries
    (unless another summarizer is given), and any chat model.

    It wires what a store and the Anthropic SDK need: `report_overflow` reads the SDK's
    errors, `delete_session(..., erase=True)` erases on SQLite and PostgreSQL, and compactions
    take PostgreSQL's advisory locks on that store. Every other option is `Sessions`'s
    (`SessionsOptions`: `hooks`, `context_provider`, `metrics`
    (`abridged.adapters.opentelemetry.OpenTelemetryMetrics`), `env`, `model_windows`,
    `model_capabilities`, `max_message_bytes`, `summarizer_breaker`, `redactor` (default
    `DefaultRedactor()`: add patterns with `DefaultRedactor(extra=[...])`, or pass
    `NoRedaction()`), ...), as keywords or `options=`. Raises `StoreError` when the store
    cannot be opened (not a database, unreachable, ...)."""
    service = functools.partial(Sessions, chat_model=chat_model)
    return _bootstrapped(service, "bootstrap", db, counter, summarizer, options, keywords)


def bootstrap_async(
    db: str | Path | None = None,
    *,
    counter: TokenCounter | None = None,
    summarizer: AsyncSummarizer | Summarizer | None = None,
    chat_model: AsyncChatModel | None = None,
    options: SessionsOptions | None = None,
    max_workers: int = MAX_WORKERS,
    **keywords: Any,
) -> AsyncSessions:
    """`bootstrap` for asyncio hosts: a ready `AsyncSessions` (pass an
    `AsyncAnthropicChatModel` and, for model-written summaries, an `AsyncAnthropicSummarizer`
    from `abridged.adapters.anthropic.async_clients`). It takes the options `bootstrap` takes
    and wires the same; `max_workers` bounds the service's worker threads."""
    service = functools.partial(AsyncSessions, chat_model=chat_model, max_workers=max_workers)
    return _bootstrapped(service, "bootstrap_async", db, counter, summarizer, options, keywords)


def _bootstrapped(
    service: Callable[..., T],
    caller: str,
    db: str | Path | None,
    counter: TokenCounter | None,
    summarizer: object | None,
    options: SessionsOptions | None,
    keywords: Mapping[str, Any],
) -> T:
    """`service` on the store at `db`, with the default counter and summarizer where none
    is given, and the options `_wired` makes."""
    from abridged.adapters.summarizers import ExtractiveSummarizer
    from abridged.adapters.token_counters import default_token_counter

    counter = counter or default_token_counter()
    wired = _wired(caller, db, options, keywords)
    try:
        return service(
            counter=counter,
            summarizer=summarizer or ExtractiveSummarizer(counter),
            options=wired,
        )
    except (PersistenceError, sqlite3.Error) as error:
        raise StoreError(f"cannot open the session store {redacted(db)}: {error}") from error


def _wired(
    caller: str,
    db: str | Path | None,
    options: SessionsOptions | None,
    keywords: Mapping[str, Any],
) -> SessionsOptions:
    """The host's options, with what the store and the Anthropic SDK need where the host
    set nothing; the host's `env` over the store's settings."""
    from abridged.adapters.erasure import erase_stored_events

    given = options_of(caller, options, keywords)
    env = {**persistence_env(db), **given.env}
    return attrs.evolve(
        given,
        env=env,
        read_provider_error=given.read_provider_error or read_sdk_error,
        erase_events=given.erase_events or erase_stored_events,
        locks=given.locks if given.locks is not None else compaction_locks(env),
    )


def read_sdk_error(error: Exception) -> ProviderError:
    """The Anthropic SDK's `error` as a provider error (`translate_error`). The SDK is
    imported when the first error is read, not at start-up: its import is most of the
    start-up time of a host or a command that never calls the API."""
    from abridged.adapters.anthropic.errors import translate_error

    return translate_error(error)


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


_URL_PASSWORD = re.compile(r"(?i)((?<![\w+.-])[a-z][a-z0-9+.-]*://[^\s/@:]*:)[^\s/@]*@")
r"""A URL's password. Its scheme starts where a run of a scheme's characters does: started at
each word of `a.a.a…` (`\b`), it read the rest of the run from each."""
_CONNINFO_PASSWORD = re.compile(r"(?i)(\bpassword\s*=\s*)('[^']*'|\S+)")


def redact_passwords(text: str) -> str:
    """`text` with the password of every URL (`scheme://user:password@…`) and libpq
    `password=…` in it replaced by `***`: for messages and logs."""
    return _CONNINFO_PASSWORD.sub(r"\1***", _URL_PASSWORD.sub(r"\1***@", text))
