"""Clients that go away or stall: the proxy stops waiting for the upstream on behalf of a
client that left, and gives a client that stalls a deadline, so that neither holds an
upstream connection (and the tokens it is paying for) or a worker's request for ever."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
from starlette.requests import Request

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
