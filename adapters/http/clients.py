"""Clients that go away or stall: the proxy stops waiting for the upstream on behalf of a
client that left, and gives a client that stalls a deadline, so that neither holds an
upstream connection (and the tokens it is paying for) or a worker's request for ever."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import httpx2
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from abridged.adapters.http.errors import error_response

logger = logging.getLogger(__name__)

T = TypeVar("T")


class ClientGoneError(Exception):
    """The client closed its connection before its answer was ready."""


async def unless_gone(request: Request, work: Callable[[], Awaitable[T]]) -> T:
    """`work()`'s result; `ClientGoneError` (with `work` cancelled) if the client closes its
    connection first. Called once the request's body is read: what the server receives
    after it is the disconnect."""
    if await request.is_disconnected():
        raise ClientGoneError
    done: list[T] = []
    failed: list[BaseException] = []
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                pass
            group.cancel_scope.cancel()

        group.start_soon(watch)
        try:
            done.append(await work())
        except Exception as error:  # raised after the task group, not wrapped in a group
            failed.append(error)
        group.cancel_scope.cancel()
    if failed:
        raise failed[0]
    if not done:
        raise ClientGoneError
    return done[0]


ERROR_BYTES = 1 << 20
"""The most of an upstream's error answer the proxy reads (the API's are a few hundred
bytes): a gateway's page of hundreds of megabytes would otherwise be held whole."""


async def whole_answer(
    request: Request, answer: httpx2.Response, reply_bytes: int, *, read: bool = True
) -> bytes | Response:
    """The upstream's answer, not streamed, read whole (`b""` when not `read`) and closed;
    or what the client gets instead: a 502 when it broke off, or when a reply (200) is over
    `reply_bytes`. An error's answer over `ERROR_BYTES` is read as none: the client gets
    its status, without the rest."""
    limit = reply_bytes if answer.status_code == 200 else ERROR_BYTES

    async def body() -> bytes | None:
        data = bytearray()
        async for chunk in answer.aiter_bytes():
            data += chunk
            if len(data) > limit:
                return None
        return bytes(data)

    try:
        payload = await unless_gone(request, body) if read else b""
    except httpx2.HTTPError:
        return error_response(502, "api_error", "abridged: the upstream's answer broke off")
    finally:
        await answer.aclose()
    if payload is None and answer.status_code == 200:
        return error_response(
            502, "api_error", f"abridged: the upstream's reply is over {limit:,} bytes"
        )
    return payload or b""


class BodyTimeoutError(HTTPException):
    """The client did not send its request's body within the time it is given. An
    `HTTPException`: FastAPI answers it as it is, where it would take another error raised
    while it reads a body for a malformed one."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            408,
            f"abridged: the request's body did not arrive within {seconds:g} s",
            # The rest of the body may still come: the connection cannot carry another request.
            headers={"connection": "close"},
        )


def late_body(late: BodyTimeoutError) -> Response:
    """The API's shape of a 408, on a connection that closes after it."""
    answer = error_response(late.status_code, "timeout_error", late.detail)
    answer.headers.update(late.headers or {})
    return answer


class BodyDeadline:
    """ASGI middleware: a request's body must arrive whole within `seconds` of its headers,
    else reading it raises `BodyTimeoutError`. Without it, a client that sends half a body
    and waits (or trickles it) holds its request open for ever."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = anyio.current_time() + self.seconds
        whole = False

        async def in_time() -> Message:
            nonlocal whole
            if whole:  # what comes after the body (a disconnect) has no deadline
                return await receive()
            with anyio.move_on_after(deadline - anyio.current_time()):
                message = await receive()
                whole = message["type"] != "http.request" or not message.get("more_body")
                return message
            raise BodyTimeoutError(self.seconds)

        await self.app(scope, in_time, send)


class TimelyStreamingResponse(StreamingResponse):
    """A stream whose client must take each part within `seconds`. One that stops reading
    (a stalled process, a lost network) would otherwise hold the stream, and the upstream
    connection it reads from, for as long as its connection stays open; past `seconds` the
    stream stops there and its connection is closed (the response left incomplete)."""

    def __init__(self, *args: Any, seconds: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seconds = seconds

    async def stream_response(self, send: Send) -> None:
        async def in_time(message: Message) -> None:
            with anyio.fail_after(self.seconds):
                await send(message)

        try:
            await super().stream_response(in_time)
        except TimeoutError:
            logger.warning(
                "a client took no part of a stream for %g s: it is cut off", self.seconds
            )
            closing = getattr(self.body_iterator, "aclose", None)
            if closing is not None:
                await closing()
