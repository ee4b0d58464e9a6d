"""`abridged serve`: the Messages proxy and the sessions API on uvicorn."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

import click
from click.decorators import FC

from abridged.adapters.cli.common import db_option, main, settings_option_values, settings_options
from abridged.adapters.http.config import (
    CONFIG_VARIABLE,
    DEFAULT_CLIENT_TIMEOUT,
    DEFAULT_HOST,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_PORT,
    DEFAULT_UPSTREAM,
    DEFAULT_UPSTREAM_TIMEOUT,
    TOKENS_VARIABLE,
    ServeConfig,
    parse_tokens,
)

APP = "abridged.adapters.http.app:app_from_env"
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
WORKER_HEALTHCHECK_SECONDS = 60
"""How long a worker may take to answer its supervisor's health check before it is killed and
replaced. A worker process answers only once it has imported the application (about 2 s of
CPU); uvicorn's own 5 s killed workers still starting on a busy machine, again and again."""


def _shown(flag: str, kind: click.ParamType[Any], default: object, help: str) -> Callable[[FC], FC]:
    return click.option(flag, type=kind, default=default, show_default=True, help=help)


@main.command()
@db_option("The session store: a SQLite file or a postgresql:// URL (several workers need one).")
@click.option(
    "--upstream",
    envvar="ABRIDGED_UPSTREAM",
    default=DEFAULT_UPSTREAM,
    show_default=True,
    help="The Messages API requests are forwarded to ($ABRIDGED_UPSTREAM).",
)
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True)
@_shown(
    "--upstream-timeout",
    click.FloatRange(min=0, min_open=True),
    DEFAULT_UPSTREAM_TIMEOUT,
    "Seconds the upstream may take to answer, and then to send each part of its answer (a "
    "stream that keeps coming may last longer).",
)
@_shown(
    "--client-timeout",
    click.FloatRange(min=0, min_open=True),
    DEFAULT_CLIENT_TIMEOUT,
    "Seconds a client may take to send a request's body (else 408), and to take each part "
    "of a streamed reply (else its connection is closed).",
)
@_shown(
    "--max-body-bytes",
    click.IntRange(min=1),
    DEFAULT_MAX_BODY_BYTES,
    "Larger request bodies are refused (413).",
)
@_shown(
    "--max-message-bytes",
    click.IntRange(min=1),
    DEFAULT_MAX_BODY_BYTES,
    "A larger message (its JSON) is refused (413) and not stored; by default the API's own "
    "request limit, so that every message the API takes passes.",
)
@_shown(
    "--log-level",
    click.Choice(LOG_LEVELS),
    "warning",
    "The server's log: 'info' shows each worker starting, and one that died being replaced "
    "(requests are never logged).",
)
@click.option(
    "--context-window",
    type=click.IntRange(min=1),
    default=None,
    help="Every session's context window (default: the model's).",
)
@click.option(
    "--token",
    "tokens",
    multiple=True,
    metavar="TENANT=TOKEN",
    help=f"A tenant's bearer token (repeatable; or ${TOKENS_VARIABLE}=t=tok,...).",
)
@click.option(
    "--defer-compaction",
    is_flag=True,
    default=False,
    help="Run a compaction that is due while the request still fits in the background, "
    "instead of before the request goes upstream: no request waits for a summary it does "
    "not need, but the summary's work shares the worker with other requests "
    "(docs/serving.md).",
)
@settings_options(
    "Compaction settings of the sessions the proxy starts.", "Override one setting (repeatable)."
)
def serve(
    db: str,
    upstream: str,
    host: str,
    port: int,
    workers: int,
    upstream_timeout: float,
    client_timeout: float,
    max_body_bytes: int,
    max_message_bytes: int,
    log_level: str,
    context_window: int | None,
    defer_compaction: bool,
    tokens: tuple[str, ...],
    preset: str,
    overrides: tuple[str, ...],
) -> None:
    """Serve the Messages proxy (point ANTHROPIC_BASE_URL here) and the sessions API.

    Listens on loopback unless --host says otherwise. Several --workers need a PostgreSQL
    store. See docs/serving.md."""
    import uvicorn

    settings_option_values(preset, overrides)  # checked here, before any worker starts
    try:
        token_map = parse_tokens(list(tokens) or os.environ.get(TOKENS_VARIABLE, "").split(","))
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--token") from None
    if workers > 1 and not db.startswith(("postgresql://", "postgres://")):
        raise click.UsageError("several workers need a PostgreSQL store (--db postgresql://...)")
    values: dict[str, Any] = {"preset": preset, "overrides": _overrides(overrides)}
    try:
        config = ServeConfig(
            db=db,
            upstream=upstream,
            upstream_timeout=upstream_timeout,
            client_timeout=client_timeout,
            max_body_bytes=max_body_bytes,
            max_message_bytes=max_message_bytes,
            tokens=token_map,
            context_window=context_window,
            defer_compaction=defer_compaction,
            **values,
        )
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--upstream") from None
    os.environ[CONFIG_VARIABLE] = config.to_env()
    click.echo(
        f"abridged serve on http://{host}:{port} -> {_shown_url(upstream)} ({workers} worker(s))",
        err=True,
    )
    options: dict[str, Any] = {
        "factory": True,
        "host": host,
        "port": port,
        "workers": workers,
        "log_level": log_level,
        "timeout_worker_healthcheck": WORKER_HEALTHCHECK_SECONDS,
        # Headers (the client's key among them) are never logged: no access log.
        "access_log": False,
    }
    if workers == 1:
        uvicorn.run(APP, **options)
        return
    from uvicorn.supervisors import Multiprocess

    shared = uvicorn.Config(APP, **options)
    Multiprocess(shared, sockets=[tcp_socket(shared.bind_socket())]).run()


def tcp_socket(sock: socket.socket) -> socket.socket:
    """The workers' shared listening socket, marked as TCP's. asyncio turns Nagle's
    algorithm off on a connection only when its socket says it is TCP, and uvicorn's shared
    socket says protocol 0: each response then waited on the client's delayed ACK, about
    40 ms a request (one worker binds its own socket, marked)."""
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return sock
    return socket.socket(sock.family, sock.type, socket.IPPROTO_TCP, fileno=sock.detach())


def _shown_url(url: str) -> str:
    """`url` without the user and password a gateway's address may carry."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"***@{host}"))


def _overrides(items: tuple[str, ...]) -> dict[str, Any]:
    import json

    values: dict[str, Any] = {}
    for item in items:
        key, _, raw = item.partition("=")
        try:
            values[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            values[key.strip()] = raw
    return values
