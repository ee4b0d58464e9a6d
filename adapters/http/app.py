"""The ASGI application of `abridged serve`: the Messages proxy, the sessions API, health
and metrics, over one `Sessions` service per worker process."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2
from fastapi import FastAPI
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from abridged.adapters.bootstrap import bootstrap, persistence_env
from abridged.adapters.http.clients import BodyDeadline
from abridged.adapters.http.config import ServeConfig
from abridged.adapters.http.locks import RequestLocks
from abridged.adapters.http.metrics import ServeMetrics
from abridged.adapters.http.proxy import MessagesProxy
from abridged.adapters.http.sessions_api import SESSIONS_PREFIX, sessions_router
from abridged.application.service import Sessions
from abridged.domain.errors import SessionError

logger = logging.getLogger(__name__)

WORKER_THREADS = 64
"""Threads a worker runs store work and token counting on (the event loop never blocks)."""


def create_app(config: ServeConfig, sessions: Sessions | None = None) -> FastAPI:
    """The application for `config`; it opens its own service on `config.db` at startup
    unless `sessions` is given (then it is used as it is, and not closed)."""
    metrics = ServeMetrics()
    service = sessions or bootstrap(
        config.db,
        metrics=metrics,
        max_message_bytes=config.max_message_bytes,
        defer_compaction=config.defer_compaction,
    )
    locks = RequestLocks(persistence_env(config.db) if sessions is None else {})
    upstream = httpx2.AsyncClient(
        base_url=config.upstream,
        timeout=httpx2.Timeout(config.upstream_timeout, connect=10.0),
        limits=httpx2.Limits(max_connections=512, max_keepalive_connections=64),
    )
    proxy = MessagesProxy(service, config, upstream, locks, metrics)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = WORKER_THREADS
        try:
            yield
        finally:
            await upstream.aclose()
            locks.close()
            if sessions is None:
                service.close()

    app = FastAPI(
        title="abridged serve",
        summary="A Messages API proxy that keeps conversations inside the context window, "
        "and the sessions it records.",
        lifespan=lifespan,
    )
    app.state.sessions = service
    app.state.config = config
    app.state.metrics = metrics

    @app.post("/v1/messages", tags=["messages"])
    async def messages(request: Request) -> Response:
        """The Messages API: the session's compacted request goes upstream."""
        return await proxy.messages(request)

    @app.post("/v1/messages/count_tokens", tags=["messages"])
    async def count_tokens(request: Request) -> Response:
        """Forwarded unchanged; nothing is stored."""
        return await proxy.count_tokens(request)

    @app.get("/healthz", tags=["operations"])
    async def healthz() -> Response:
        """200 when the session store answers."""
        try:
            await anyio.to_thread.run_sync(lambda: service.list_sessions(limit=1))
        except SessionError as error:
            # Unauthenticated: the store's host and user are the log's, not the caller's.
            logger.warning("health check: %s", error)
            return JSONResponse({"status": "unavailable"}, 503)
        return JSONResponse({"status": "ok"})

    @app.get("/metrics", tags=["operations"])
    async def metrics_text() -> Response:
        """This worker's counters, in the Prometheus text format."""
        return PlainTextResponse(metrics.text())

    # The limit is checked before the body is read, and before the bearer token: FastAPI
    # reads a route's JSON body before it runs its dependencies.
    app.include_router(sessions_router(service), max_body_size=config.max_body_bytes)
    app.add_middleware(BodyDeadline, seconds=config.client_timeout)
    app.add_middleware(DeclaredBodyLimit, limit=config.max_body_bytes)
    return app


class DeclaredBodyLimit:
    """ASGI middleware: a sessions API request whose declared length is over `limit` gets
    413 `{"detail": ...}`, as the API's other errors, before its body or its token is read.
    (FastAPI's own limit answers it in plain text; it still counts a body sent in chunks,
    and answers that one in JSON.)"""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(SESSIONS_PREFIX):
            declared = Headers(scope=scope).get("content-length", "")
            if declared.isdigit() and int(declared) > self.limit:
                detail = f"the request is over {self.limit} bytes (--max-body-bytes)"
                await JSONResponse({"detail": detail}, 413)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def app_from_env() -> FastAPI:
    """The application as a worker process builds it (`uvicorn --factory`). What the worker
    has built by then (its imports, the application, the service, the tokenizer) lives as long
    as the process, so it is moved out of the cyclic collector's reach (`gc.freeze`): a full
    collection walked it all, 80 to 90 ms in the middle of whichever request set it off
    (see docs/performance.md, "Run U")."""
    app = create_app(ServeConfig.from_env())
    gc.collect()
    gc.freeze()
    return app
