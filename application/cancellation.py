"""Stopping the work of a call its asyncio caller cancelled.

`AsyncSessions` runs each command on a worker thread, and a thread cannot be interrupted:
when a host cancels the task awaiting a call (a client gone, `asyncio.timeout`, a sibling's
failure, a shutdown), the command has to stop itself. Each awaited call gets a `CancelScope`,
current in the context its worker runs in (a context variable: a thread the command starts
in a copy of its context sees it too), and cancelled with the call. From then on the command
stops at its next checkpoint by raising `CommandCancelled`:

- before it starts and before each save (`checkpoint`): stopped there, it saves nothing
  more; what it saved before (each save is a whole transaction) stays;
- while it waits for one of the session's locks (`acquire_unless_cancelled`);
- while it waits for an awaited port (`CancelScope.calling`): the summarizer's coroutine is
  cancelled on the event loop, so nobody goes on writing a summary nobody waits for.

Code between checkpoints (a synchronous summarizer, a hook, a store write) runs to its end.

Without a scope (the synchronous `Sessions`, called from the host's own threads) nothing
changes: checkpoints pass and locks are waited for as before.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

__all__ = [
    "CancelScope",
    "CommandCancelled",
    "acquire_unless_cancelled",
    "checkpoint",
    "current_scope",
    "within",
]

P = ParamSpec("P")
T = TypeVar("T")

POLL = 0.02
"""Seconds between two looks at the scope while a lock is waited for."""


class CommandCancelled(asyncio.CancelledError):
    """Raised on a worker thread to stop a command whose caller was cancelled.

    Like `asyncio.CancelledError` it is a `BaseException`: no `except Exception` of a command
    takes it for a failure to record, and the unit of work drops what was not saved."""


class CancelScope:
    """The cancellation of one awaited call, seen by the threads doing its work."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._cancelled = threading.Event()
        self._callbacks: list[Callable[[], object]] = []

    @property
    def cancelled(self) -> bool:
        """Whether the call was cancelled."""
        return self._cancelled.is_set()

    def cancel(self) -> None:
        """Cancels the call: checkpoints raise from now on, and what a `calling` block waits
        for is told to stop. Cheap and non-blocking (the event loop calls it)."""
        with self._guard:
            if self._cancelled.is_set():
                return
            self._cancelled.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def check(self) -> None:
        """Raises `CommandCancelled` once the call is cancelled."""
        if self._cancelled.is_set():
            raise CommandCancelled("the caller of this command was cancelled")

    @contextmanager
    def calling(self, callback: Callable[[], object]) -> Iterator[None]:
        """While the block runs, a cancellation calls `callback` (at once if the call is
        cancelled already): what stops the wait the block is in. `callback` must not block."""
        with self._guard:
            now = self._cancelled.is_set()
            if not now:
                self._callbacks.append(callback)
        if now:
            callback()
        try:
            yield
        finally:
            with self._guard:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)


_current: contextvars.ContextVar[CancelScope | None] = contextvars.ContextVar(
    "abridged_cancel_scope", default=None
)


def current_scope() -> CancelScope | None:
    """The scope of the awaited call this thread works for, if any."""
    return _current.get()


def within(scope: CancelScope, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`function(*args, **kwargs)` with `scope` as the current scope."""
    token = _current.set(scope)
    try:
        return function(*args, **kwargs)
    finally:
        _current.reset(token)


def checkpoint() -> None:
    """Raises `CommandCancelled` when the current call was cancelled."""
    scope = _current.get()
    if scope is not None:
        scope.check()


def acquire_unless_cancelled(lock: threading.Lock | threading.RLock) -> None:
    """Waits for `lock` and holds it; raises `CommandCancelled` instead when the current call
    is cancelled while it waits."""
    scope = _current.get()
    if scope is None:
        lock.acquire()
        return
    while not lock.acquire(timeout=POLL):
        scope.check()
