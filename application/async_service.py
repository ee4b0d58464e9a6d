"""`AsyncSessions`: the service for asyncio hosts.

The same commands, decisions and events as `Sessions`, awaited. It is built on a `Sessions`
(so there is one implementation of every decision) and keeps the event loop free:

- store reads and writes, token counting and the domain's decisions run on the service's own
  worker threads (`max_workers`), never on the loop; the host wraps nothing;
- the chat model's requests are awaited on the loop (`AsyncChatModel`), so no thread waits
  for the provider during a reply;
- an async summarizer (`AsyncSummarizer`) is awaited on the loop too; the worker that asked for
  the summary waits for it. A synchronous `Summarizer` (the offline extractive one) runs on
  the worker itself;
- a compaction off the user's turn runs as an asyncio task (`compact_soon`), started after a
  reply that crosses the session's `background_threshold_ratio`.

Hooks (`CompactionHooks`) and a `ContextProvider` are called on the worker threads.

A call its caller cancels (`asyncio.timeout`, a client gone, a shutdown) stops its command at
the command's next checkpoint (`abridged.application.cancellation`): a wait for the session's
locks or for a worker, an awaited summary (cancelled on the loop), a save. The
`CancelledError` reaches the caller once the worker has stopped, so what the command saved
(each save one transaction, whole or not at all) is final by then; saved after its caller was
cancelled, it saves nothing more. `aclose()` refuses new calls, waits for the running ones,
and, cancelled itself, stops them with `ServiceClosedError`. See docs/embedding.md,
"Cancellation and timeouts".

Every public command and query of `Sessions` has its awaited counterpart here: most are
`_awaited(Sessions.name)`, the same method run on a worker thread; `complete` is the same
loop (`abridged.application.completion`) with each step awaited; the options are one
`SessionsOptions`. `tests/unit/test_async_parity.py` fails when a method, a parameter or an
option has no twin.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import inspect
import logging
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, Unpack
from uuid import UUID

import attrs

from abridged.application.async_ports import AsyncChatModel, AsyncSummarizer
from abridged.application.background import room_for
from abridged.application.cancellation import (
    CancelScope,
    CommandCancelled,
    current_scope,
    within,
)
from abridged.application.chain import correlation
from abridged.application.completion import completion, driven_async
from abridged.application.options import SessionsOptions, options_of
from abridged.application.ports import (
    CompactionReport,
    ModelReply,
    SendParameters,
    SentPrefix,
    Summarizer,
    Summary,
    SummaryParameters,
    TokenCounter,
    with_earlier,
    with_sent,
)
from abridged.application.service import Sessions, as_session_id
from abridged.application.store import SavedListener
from abridged.application.unit_of_work import closed_under_command
from abridged.domain.capabilities import ModelCapabilities
from abridged.domain.context import Context
from abridged.domain.errors import ServiceClosedError
from abridged.domain.messages import JSON, Message

__all__ = ["AsyncSessions"]

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

MAX_WORKERS = 16
"""Worker threads for store access and decisions; calls beyond it wait their turn."""


def _awaited(
    method: Callable[Concatenate[Sessions, P], T], more: str = ""
) -> Callable[Concatenate[AsyncSessions, P], Coroutine[Any, Any, T]]:
    """`method` of `Sessions` as a coroutine method of `AsyncSessions`: the same signature
    and checks, run on one of the service's worker threads, never on the loop."""
    name = method.__name__

    @functools.wraps(method)
    async def run(self: AsyncSessions, /, *args: P.args, **kwargs: P.kwargs) -> T:
        command: Callable[P, T] = getattr(self.sync, name)
        return await self._run(command, *args, **kwargs)

    run.__doc__ = f"`Sessions.{name}`, awaited" + (f": {more}" if more else ".")
    return run


class _HostLoop:
    """The host's event loop, for workers that need an awaited port's answer."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: int | None = None

    def bind(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.thread = threading.get_ident()

    def wait_for(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """The coroutine's result, awaited on the host's loop; when the call this worker
        works for is cancelled, the coroutine is cancelled and `CommandCancelled` raised."""
        loop = self.loop
        if loop is None or loop.is_closed() or threading.get_ident() == self.thread:
            coroutine.close()
            raise RuntimeError("an awaited port was called outside the service's worker threads")
        future = asyncio.run_coroutine_threadsafe(coroutine, loop)
        scope = current_scope()
        if scope is None:
            return future.result()
        with scope.calling(future.cancel):
            try:
                return future.result()
            except concurrent.futures.CancelledError:
                scope.check()  # the call was cancelled: the command stops
                raise  # the port cancelled itself: its failure


class _Named(Protocol):
    @property
    def name(self) -> str: ...


Port = TypeVar("Port", bound=_Named)


class _OnHostLoop(Generic[Port]):
    """An awaited port, called from a worker: each call awaited on the host's loop."""

    def __init__(self, inner: Port, loop: _HostLoop) -> None:
        self.inner = inner
        self.loop = loop

    @property
    def name(self) -> str:
        return self.inner.name


class _AwaitedSummarizer(_OnHostLoop[AsyncSummarizer]):
    """An `AsyncSummarizer` as the `Summarizer` a worker calls."""

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        earlier: Sequence[str] = (),
        sent: SentPrefix | None = None,
        **request: Unpack[SummaryParameters],
    ) -> Summary:
        given, extra = with_earlier(self.inner.summarize, messages, earlier)
        given_sent = with_sent(self.inner.summarize, sent)
        return self.loop.wait_for(self.inner.summarize(given, **request, **extra, **given_sent))


class _AwaitedChatModel(_OnHostLoop[AsyncChatModel]):
    """An `AsyncChatModel` as the `ChatModel` of the synchronous service underneath (whose
    `complete` a host may call from a thread); `AsyncSessions.complete` awaits it directly."""

    @property
    def context_management(self) -> Mapping[str, JSON] | None:
        return self.inner.context_management

    def send(self, context: Context, **request: Unpack[SendParameters]) -> ModelReply:
        return self.loop.wait_for(self.inner.send(context, **request))

    def count_tokens(self, context: Context, *, model: str) -> int:
        return self.loop.wait_for(self.inner.count_tokens(context, model=model))


class AsyncSessions:
    """Event-sourced conversation sessions for asyncio hosts; see the module docstring.

    `summarizer` may be an `AsyncSummarizer` or a `Summarizer`; `chat_model` an
    `AsyncChatModel`. The options are those of `Sessions` (`SessionsOptions`, as keywords or
    `options=`); `max_workers` bounds the worker threads. Use it as
    `async with AsyncSessions(...) as sessions:`, or call `aclose()` at the end: it waits for
    the background compactions and closes the store.
    """

    def __init__(
        self,
        *,
        counter: TokenCounter,
        summarizer: AsyncSummarizer | Summarizer,
        chat_model: AsyncChatModel | None = None,
        options: SessionsOptions | None = None,
        max_workers: int = MAX_WORKERS,
        **keywords: Any,
    ) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self._loop = _HostLoop()
        self.chat_model = chat_model
        self.options = options_of("AsyncSessions", options, keywords)
        sync_summarizer: Summarizer
        if inspect.iscoroutinefunction(summarizer.summarize):
            sync_summarizer = _AwaitedSummarizer(summarizer, self._loop)  # type: ignore[arg-type]
        else:
            sync_summarizer = summarizer  # type: ignore[assignment]
        self.sync = Sessions(
            counter=counter,
            summarizer=sync_summarizer,
            chat_model=(
                _AwaitedChatModel(chat_model, self._loop) if chat_model is not None else None
            ),
            # This service starts background compactions itself, as tasks.
            options=attrs.evolve(self.options, background=False),
        )
        """The synchronous service underneath (its commands block: call them from threads)."""
        self.background = self.options.background
        if self.background:
            self.sync.background.on_due = self._due_from_worker
            self.sync.background.has_room = self._has_room
        self._executor = ThreadPoolExecutor(max_workers, thread_name_prefix="abridged-async")
        self._tasks: dict[UUID, asyncio.Task[CompactionReport | None]] = {}
        self._working: dict[asyncio.Future[Any], CancelScope] = {}
        """The calls running on the workers (or queued for one), with their scopes."""
        self._closed: asyncio.Event | None = None
        """Set when `aclose()` has finished; `None` until it starts."""

    async def __aenter__(self) -> AsyncSessions:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _check_open(self) -> None:
        if self._closed is not None:
            raise ServiceClosedError("the service was closed: build a new one on the store")
        self.sync.uow.check_open()  # its workers are gone too: say so, not the executor

    async def _run(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`function` run on a worker. Cancelled, the call cancels its scope and returns (with
        the `CancelledError`) once the worker has stopped, at its next checkpoint
        (`abridged.application.cancellation`): whatever the command saved is then final."""
        self._loop.bind()
        self._check_open()
        scope = CancelScope()
        # The caller's context goes with the command (a `correlation` block, for one).
        context = contextvars.copy_context()
        call = functools.partial(within, scope, function, *args, **kwargs)
        worker: concurrent.futures.Future[T] = self._executor.submit(context.run, call)
        done = asyncio.wrap_future(worker)
        self._working[done] = scope
        done.add_done_callback(self._working.pop)
        try:
            return await asyncio.shield(done)
        except CommandCancelled:
            # The worker was stopped while this caller was not cancelled: `aclose()` did.
            if self._closed is None:
                raise  # pragma: no cover - only `aclose()` cancels another caller's scope
            raise closed_under_command() from None
        except asyncio.CancelledError:
            scope.cancel()
            worker.cancel()  # still queued: it never starts
            await _stopped(done)
            raise

    # Commands.

    start_session = _awaited(Sessions.start_session)
    append_message = _awaited(Sessions.append_message)
    append_messages = _awaited(Sessions.append_messages)
    record_reply = _awaited(
        Sessions.record_reply,
        "a reply past the session's background mark starts its compaction as a task "
        "(`compact_soon`).",
    )
    prepare_request = _awaited(
        Sessions.prepare_request,
        "one compaction at a time per session, and a running background compaction is waited "
        "for, never run twice. `on_notice` is called from a worker thread.",
    )
    append_and_prepare = _awaited(Sessions.append_and_prepare)
    report_overflow = _awaited(Sessions.report_overflow, "for a host that sends requests itself.")
    check_count = _awaited(Sessions.check_count)
    compact = _awaited(Sessions.compact)
    request_compaction = _awaited(Sessions.request_compaction)
    withdraw_turn = _awaited(Sessions.withdraw_turn)

    def compact_soon(self, session_id: UUID | str) -> asyncio.Task[CompactionReport | None]:
        """Starts a compaction off the user's turn as a task of the running loop (see
        `Sessions.compact_soon`); while one runs for the session, returns that task."""
        self._check_open()
        session_id = as_session_id(session_id)
        running = self._tasks.get(session_id)
        if running is not None and not running.done():
            return running
        task = asyncio.ensure_future(self._run(self.sync.background.run, session_id))
        self._tasks[session_id] = task
        task.add_done_callback(functools.partial(self._forget, session_id))
        return task

    def _has_room(self, session_id: UUID) -> bool:
        # Read on a worker thread: a snapshot of the tasks is enough to bound the backlog.
        return room_for(session_id, self._tasks)

    def _due_from_worker(self, session_id: UUID) -> None:
        # Called on a worker thread, right after a reply is saved: the task starts on the loop.
        loop = self._loop.loop
        if loop is not None and not loop.is_closed():
            # Closed meanwhile: no compaction starts, and the reply stays saved.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._due, session_id)

    def _due(self, session_id: UUID) -> None:
        if self._closed is None:  # closing: no new compaction starts
            self.compact_soon(session_id)

    def _forget(self, session_id: UUID, task: asyncio.Task[CompactionReport | None]) -> None:
        if self._tasks.get(session_id) is task:
            del self._tasks[session_id]
        if not task.cancelled() and task.exception() is not None:
            logger.warning("background compaction of %s failed: %s", session_id, task.exception())

    async def wait_background(self) -> None:
        """Waits for the background compactions running now."""
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    reconfigure = _awaited(Sessions.reconfigure)
    clear_session = _awaited(Sessions.clear_session)
    resume_session = _awaited(Sessions.resume_session)

    complete = driven_async(completion)
    """`Sessions.complete`, awaited: the same loop (`abridged.application.completion`)."""

    def correlation(self, correlation_id: str | None) -> AbstractContextManager[None]:
        """As `Sessions.correlation`: the events the block's awaited commands store record
        the host's correlation id."""
        return correlation(correlation_id)

    # Queries.

    def capabilities(self, model: str) -> ModelCapabilities:
        """As `Sessions.capabilities` (a lookup in memory: not awaited)."""
        return self.sync.capabilities(model)

    def on_saved(self, listener: SavedListener) -> None:
        """As `Sessions.on_saved` (a registration in memory: not awaited); `listener` is
        called on the service's worker threads."""
        self.sync.on_saved(listener)

    session = _awaited(Sessions.session)
    list_sessions = _awaited(Sessions.list_sessions)
    stats = _awaited(Sessions.stats)
    compactions = _awaited(Sessions.compactions)
    delete_session = _awaited(Sessions.delete_session)
    derived_sessions = _awaited(Sessions.derived_sessions)
    history = _awaited(Sessions.history)

    async def aclose(self) -> None:
        """Closes the service: every call from now on raises `ServiceClosedError`; the
        commands running and the background compactions are waited for; then the store and
        the workers are closed. Cancelled while it waits (a host's shutdown timeout), it
        stops them as a cancellation of their callers would, saving nothing more: a running
        command raises `ServiceClosedError`, a background compaction ends cancelled; and it
        closes the store all the same. Closing again waits for the first close."""
        if self._closed is not None:
            await self._closed.wait()
            return
        self._closed = closed = asyncio.Event()
        try:
            try:
                await self._drained()
            except asyncio.CancelledError:
                for scope in self._working.values():
                    scope.cancel()
                for task in self._tasks.values():
                    task.cancel()
                await _stopped(self._drained())
                await _stopped(self._close_store())
                raise
            await self._close_store()
        finally:
            self._executor.shutdown(wait=False)
            closed.set()

    async def _close_store(self) -> None:
        closing = asyncio.wrap_future(self._executor.submit(self.sync.close))
        try:
            await asyncio.shield(closing)
        except asyncio.CancelledError:
            await _stopped(closing)
            raise

    async def _drained(self) -> None:
        """Waits until no call runs on the workers and no background compaction runs."""
        while self._working or self._tasks:
            await asyncio.wait([*self._working, *self._tasks.values()])


async def _stopped(work: asyncio.Future[Any] | Coroutine[Any, Any, Any]) -> None:
    """Waits until `work` is done, through any cancellation of the caller meanwhile (the
    caller, being cancelled already, raises its `CancelledError` next). What it raised is
    taken here: nobody else waits for it."""
    done = asyncio.ensure_future(work)
    while not done.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait([done])
    if not done.cancelled():
        done.exception()
