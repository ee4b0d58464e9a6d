"""A summarizer with a time budget and a circuit breaker.

A dead summarizer must not make every request of every session wait for it: one call (with
whatever retries the adapter makes inside it) gets `budget` seconds in all, after which the
compaction fails open at once; after `failures` consecutive failures the breaker opens and
the summarizer is not called again for `cooldown` seconds, then one trial call decides
whether it closes. The state lives in the application service, one per `Sessions`; the
domain never sees it.

For `AsyncSessions` the wait is also a cancellation point (`abridged.application.cancellation`):
when the caller is cancelled the worker stops waiting at once, and an awaited summarizer is
cancelled on the loop, as it is when the budget runs out.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Unpack

import attrs

from abridged.application.cancellation import (
    POLL,
    CancelScope,
    CommandCancelled,
    current_scope,
    within,
)
from abridged.application.ports import (
    SentPrefix,
    Summarizer,
    SummarizerError,
    Summary,
    SummaryParameters,
    with_earlier,
    with_sent,
)
from abridged.domain.messages import Message

__all__ = ["BreakerSettings", "GuardedSummarizer"]

logger = logging.getLogger(__name__)


@attrs.frozen
class BreakerSettings:
    """How long one summarizer call may take, and when to stop calling a failing one.

    `budget`: seconds for one call, retries included (None: no limit). `failures`:
    consecutive failures that open the breaker (0: never opens). `cooldown`: seconds the
    breaker stays open before one trial call."""

    budget: float | None = 120.0
    failures: int = 3
    cooldown: float = 60.0

    def __attrs_post_init__(self) -> None:
        if self.budget is not None and not self.budget > 0:
            raise ValueError(f"budget must be a positive number of seconds, got {self.budget}")
        if self.failures < 0:
            raise ValueError(f"failures must be 0 or more, got {self.failures}")
        if not self.cooldown >= 0:
            raise ValueError(f"cooldown must be 0 or more seconds, got {self.cooldown}")


class GuardedSummarizer:
    """Wraps a `Summarizer`: same name and contract, bounded in time, behind a breaker.

    Every failure, whatever the summarizer raised, reaches the caller as `SummarizerError`,
    so threshold compaction can always fail open."""

    def __init__(
        self,
        summarizer: Summarizer,
        settings: BreakerSettings | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = summarizer
        self.settings = settings or BreakerSettings()
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._open_until: float | None = None

    @property
    def name(self) -> str:
        """The wrapped summarizer's name."""
        return self.inner.name

    @property
    def is_open(self) -> bool:
        """Whether calls are refused at once (the summarizer failed too often, recently)."""
        with self._lock:
            return self._open_until is not None and self._clock() < self._open_until

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        earlier: Sequence[str] = (),
        sent: SentPrefix | None = None,
        **request: Unpack[SummaryParameters],
    ) -> Summary:
        """The wrapped summarizer's summary; raises `SummarizerError` when it fails, takes
        longer than the budget, or the breaker is open. `earlier` reaches the wrapped
        summarizer as `with_earlier` says."""
        with self._lock:
            if self._open_until is not None and self._clock() < self._open_until:
                raise SummarizerError(
                    f"summarizer {self.inner.name} is not called: it failed "
                    f"{self._failures} times in a row (the circuit breaker is open)"
                )

        given, extra = with_earlier(self.inner.summarize, messages, earlier)
        given_sent = with_sent(self.inner.summarize, sent)

        def call() -> Summary:
            return self.inner.summarize(given, **request, **extra, **given_sent)

        try:
            summary = self._bounded(call)
        except SummarizerError:
            self._failed()
            raise
        with self._lock:
            self._failures = 0
            self._open_until = None
        return summary

    def _bounded(self, call: Callable[[], Summary]) -> Summary:
        budget = self.settings.budget
        if budget is None:
            return self._translated(call)
        # A synchronous call cannot be interrupted: it runs in a daemon thread, and the caller
        # stops waiting at the budget (or when its asyncio caller is cancelled). A late answer
        # is dropped; an awaited summarizer is cancelled on its loop (the call's own scope).
        results: queue.Queue[tuple[bool, object]] = queue.Queue(maxsize=1)
        caller, call_scope = current_scope(), CancelScope()

        def run() -> None:
            try:
                results.put((True, self._translated(call)))
            except BaseException as error:
                results.put((False, error))

        context = contextvars.copy_context()  # the caller's correlation id, for one
        thread = threading.Thread(
            target=context.run, args=(within, call_scope, run), name="abridged-summarizer"
        )
        thread.daemon = True
        with caller.calling(call_scope.cancel) if caller is not None else nullcontext():
            thread.start()
            try:
                ok, value = _first(results, budget, caller)
            except queue.Empty:
                call_scope.cancel()
                raise SummarizerError(
                    f"summarizer {self.inner.name} took more than {budget:g} s (its time budget)"
                ) from None
        if ok:
            assert isinstance(value, Summary)
            return value
        assert isinstance(value, BaseException)
        raise value

    def _translated(self, call: Callable[[], Summary]) -> Summary:
        try:
            return self._checked(call())
        except (SummarizerError, CommandCancelled):
            raise
        except (Exception, asyncio.CancelledError) as error:
            # A summarizer that breaks its contract must not break the session: the failure
            # is recorded and the compaction falls back like any other. A `CancelledError`
            # of its own is such a failure: the caller was not cancelled (then the call's
            # scope raises `CommandCancelled`).
            logger.warning("summarizer raised an untyped error", exc_info=True)
            raise SummarizerError(
                f"summarizer {self.inner.name} failed: {type(error).__name__}: {error}"
            ) from error

    def _checked(self, summary: object) -> Summary:
        # What a summarizer returns is recorded in the session's events: a value of another
        # shape (None, a bare string, counts that cannot be) is a failure like any other.
        problem = summary_problem(summary)
        if problem:
            raise SummarizerError(f"summarizer {self.inner.name} returned {problem}")
        assert isinstance(summary, Summary)
        return summary

    def _failed(self) -> None:
        with self._lock:
            self._failures += 1
            threshold = self.settings.failures
            if threshold and self._failures >= threshold:
                self._open_until = self._clock() + self.settings.cooldown
                logger.warning(
                    "summarizer %s: circuit breaker open after %d failures, for %.0f s",
                    self.inner.name,
                    self._failures,
                    self.settings.cooldown,
                )


def _first(
    results: queue.Queue[tuple[bool, object]], budget: float, caller: CancelScope | None
) -> tuple[bool, object]:
    """The call's outcome, within `budget` seconds (else `queue.Empty`); `CommandCancelled`
    as soon as the asyncio caller is cancelled."""
    if caller is None:
        return results.get(timeout=budget)
    deadline = time.monotonic() + budget
    while True:
        caller.check()
        left = deadline - time.monotonic()
        if left <= 0:
            raise queue.Empty
        try:
            return results.get(timeout=min(left, POLL))
        except queue.Empty:
            continue


def summary_problem(summary: object) -> str | None:
    """What is wrong with a summarizer's result, or `None` when it is a `Summary` whose text
    and model are strings and whose token counts are whole numbers, not negative."""
    if not isinstance(summary, Summary):
        return f"{type(summary).__name__}, not a Summary"
    for field in ("text", "model"):
        if not isinstance(getattr(summary, field), str):
            return f"a Summary whose {field} is {type(getattr(summary, field)).__name__}, not str"
        try:
            getattr(summary, field).encode("utf-8")
        except UnicodeEncodeError:
            return f"a Summary whose {field} holds a lone surrogate, which UTF-8 cannot encode"
    for field in ("input_tokens", "output_tokens"):
        value = getattr(summary, field)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"a Summary whose {field} is {value!r:.40}, not a count"
    if summary.block is not None:
        return block_problem(summary.block)
    return None


def block_problem(block: object) -> str | None:
    """What is wrong with a summary's `block`, the API's `compaction` block as JSON text:
    sent first in every later request, it must be one the API takes back (an object of type
    `compaction`, its summary a string sealed by a signature or `encrypted_content`)."""
    if not isinstance(block, str):
        return f"a Summary whose block is {type(block).__name__}, not str"
    try:
        wire = json.loads(block)
    except ValueError:  # JSONDecodeError, and UnicodeDecodeError's kin
        return "a Summary whose block is not JSON"
    if not isinstance(wire, dict) or wire.get("type") != "compaction":
        return "a Summary whose block is not a compaction block"
    content = wire.get("content")
    sealed = isinstance(wire.get("signature"), str) or isinstance(
        wire.get("encrypted_content"), str
    )
    if content is not None and (not isinstance(content, str) or not sealed):
        return "a Summary whose compaction block's summary is not a sealed string"
    return None
