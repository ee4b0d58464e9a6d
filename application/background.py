"""Compaction off the user's turn: started after a reply, applied only if still valid.

When a session's `background_threshold_ratio` is set, a reply that takes the estimate past
that earlier mark starts a compaction on a worker thread, while the conversation goes on.
It runs in three steps, holding the session's compaction lock throughout (so a request that
reaches the hard threshold meanwhile waits for it and uses its result, and no second
compaction of the session starts), but no lock that appends or other requests wait for:

1. decide (trigger `background`, the same planner as every compaction) and record the
   `CompactionThresholdHit`;
2. write the summary, and read the facts the ledger takes from what it covers, outside any
   store transaction, while messages keep arriving;
3. read the session again and apply the summary in one transaction, if what it covers is
   unchanged; messages appended meanwhile stay in the tail. Otherwise a
   `CompactionDiscarded` records why, and the threshold compacts later if it must.

A failing summarizer is recorded (`CompactionFailed`, fallback `dropped`) and changes nothing
else: nobody is waiting for this compaction, so there is no reason to fall back to
truncation.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any
from uuid import UUID

import attrs

from abridged.application.compactor import Compactor
from abridged.application.ledgering import LedgerSource, ledger_source
from abridged.application.ports import CompactionReport, HookVerdict, SummarizerError
from abridged.application.redaction import error_text
from abridged.application.service_ports import ServicePorts
from abridged.application.summaries import SummaryRequest, WrittenSummary
from abridged.application.unit_of_work import UnitOfWork
from abridged.domain import planner
from abridged.domain.errors import ContextOverflowError
from abridged.domain.planner import Decision
from abridged.domain.session import Session
from abridged.domain.settings import Limits

__all__ = ["BackgroundCompactions", "PlannedCompaction", "room_for"]

logger = logging.getLogger(__name__)

WORKERS = 2
"""Background compactions that may run at once in one service (one per session at most)."""


@attrs.frozen
class PlannedCompaction:
    """A background compaction decided and recorded, whose summary is being written."""

    decision: Decision
    request: SummaryRequest
    verdict: HookVerdict
    generation: int
    """The session's generation when decided: another compaction since changes what the
    summary covers."""
    limits: Limits
    session_id: UUID
    source: LedgerSource
    """What the facts ledger reads, read while the summary is written (`Ledgers.read_ahead`)."""


def room_for(session_id: UUID, running: Mapping[UUID, Future[Any] | asyncio.Future[Any]]) -> bool:
    """Whether a compaction of the session may start beside `running` (futures or tasks by
    session): one of it runs already, or fewer than `WORKERS` do."""
    busy = {key for key, future in list(running.items()) if not future.done()}
    return session_id in busy or len(busy) < WORKERS


class BackgroundCompactions:
    """The background compactions of one service, at most one per session."""

    def __init__(
        self, uow: UnitOfWork, ports: ServicePorts, compactor: Compactor, *, automatic: bool = True
    ) -> None:
        self.uow = uow
        self.ports = ports
        self.compactor = compactor
        self._guard = threading.Lock()
        self._running: dict[UUID, Future[CompactionReport | None]] = {}
        self._executor: ThreadPoolExecutor | None = None
        self.started = 0
        """How many background compactions were started (for the host's metrics)."""
        self.on_due: Callable[[UUID], object] | None = self.schedule if automatic else None
        """What starts a compaction that became due after a reply (None: nothing does)."""
        self.has_room: Callable[[UUID], bool] = self._has_room
        """Whether a compaction of the session may be put off to the background now: one of
        it runs already, or fewer than `WORKERS` run (a request does not add to a backlog)."""

    def _has_room(self, session_id: UUID) -> bool:
        with self._guard:
            return room_for(session_id, self._running)

    def after_reply(self, session: Session) -> None:
        """Called with the session a reply was just saved to: past its background mark, a
        compaction starts (`on_due`; by default `schedule`, when automatic)."""
        if self.on_due is not None and planner.background_due(session):
            self.on_due(session.id)

    def schedule(self, session_id: UUID) -> Future[CompactionReport | None]:
        """Runs `run(session_id)` on a worker thread, unless one is running for the session:
        then that one's future is returned."""
        with self._guard:
            running = self._running.get(session_id)
            if running is not None and not running.done():
                return running
            if self._executor is None:
                self._executor = ThreadPoolExecutor(WORKERS, thread_name_prefix="abridged-bg")
            future = self._executor.submit(self.run, session_id)
            self._running[session_id] = future
            self.started += 1
        future.add_done_callback(lambda done: self._forget(session_id, done))
        return future

    def _forget(self, session_id: UUID, done: Future[CompactionReport | None]) -> None:
        with self._guard:
            if self._running.get(session_id) is done:
                del self._running[session_id]
        error = done.exception()
        if error is not None:
            logger.warning(
                "background compaction of %s failed: %s",
                session_id,
                self.ports.redactor.redact(str(error)),
            )

    def wait(self) -> None:
        """Waits until every background compaction started so far has finished."""
        with self._guard:
            futures = list(self._running.values())
        for future in futures:
            future.exception()

    def shutdown(self) -> None:
        """Waits for the running compactions; later replies start none."""
        self.on_due = None
        with self._guard:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    # The compaction itself, in its steps (an async host runs them itself, see
    # `abridged.application.async_service`).

    def run(self, session_id: UUID) -> CompactionReport | None:
        """Decides, writes and applies one background compaction, holding the session's
        compaction lock; the report, or `None` when none was due or it was dropped."""
        with self.uow.compaction_lock(session_id):
            planned = self.plan(session_id)
            if planned is None:
                return None
            try:
                written = self.write(planned)
            except SummarizerError as error:
                self.fail(session_id, error)
                return None
            report = self.apply(session_id, planned, written)
        if report is not None and self.ports.hooks is not None:
            self.ports.hooks.after_compaction(session_id, report)
        return report

    def plan(self, session_id: UUID) -> PlannedCompaction | None:
        """Step 1: the decision, recorded, and what to summarize; `None` when none is due."""
        return self.uow.run(session_id, lambda: self._plan(session_id))

    def _plan(self, session_id: UUID) -> PlannedCompaction | None:
        session = self.uow.load(session_id)
        try:
            decision = planner.decide(session, "background", self.ports.extra(session)[1])
        except ContextOverflowError:
            # Nothing can make the next request fit; the request says so to the caller, with
            # the typed error, when it is prepared.
            return None
        if decision is None or planner.suppression(session, decision) is not None:
            return None
        started = self.compactor.start(session, decision, None)
        if session.pending_events:
            self.uow.save(session)
        if started is None:
            return None
        request, verdict = started
        source = ledger_source(session, decision)
        return PlannedCompaction(
            decision, request, verdict, session.generation, session.limits, session_id, source
        )

    def write(self, planned: PlannedCompaction) -> WrittenSummary:
        """Step 2: the summary (a hook's, or the summarizer's; raises `SummarizerError`),
        then the facts of what it covers, for the record to find ready: outside every lock
        a request waits for."""
        summary = planned.verdict.summary
        if summary is not None and summary.strip():
            written = self.ports.writer.supplied(planned.request, summary)
        else:
            written = self.ports.writer.write(planned.request)
        self.compactor.ledgers.read_ahead(
            planned.session_id, planned.generation, planned.decision, planned.source
        )
        return written

    def fail(self, session_id: UUID, error: SummarizerError) -> None:
        """Records a failed background summary; the session is otherwise unchanged."""

        def command() -> None:
            session = self.uow.load(session_id)
            session.fail_compaction(
                self.ports.summarizer.name, error_text(self.ports.redactor, error), "dropped"
            )
            self.uow.save(session)

        logger.warning(
            "background summary of %s failed: %s",
            session_id,
            self.ports.redactor.redact(str(error)),
        )
        self.uow.run(session_id, command)

    def apply(
        self, session_id: UUID, planned: PlannedCompaction, written: WrittenSummary
    ) -> CompactionReport | None:
        """Step 3: applies the summary if what it covers is unchanged, else records why not."""
        return self.uow.run(session_id, lambda: self._apply(session_id, planned, written))

    def _apply(
        self, session_id: UUID, planned: PlannedCompaction, written: WrittenSummary
    ) -> CompactionReport | None:
        session = self.uow.load(session_id)
        decision = planned.decision
        reason = None
        if session.generation != planned.generation:
            reason = "another compaction ran while the summary was written"
        elif session.message_count <= decision.retained_from:
            reason = "the turn it would have kept was withdrawn while the summary was written"
        elif session.limits != planned.limits:
            reason = "the session was reconfigured while the summary was written"
        elif (
            planner.messages_to_summarize(session, decision.retained_from)
            != planned.request.messages
        ):
            reason = "the messages it covers are shown differently now"
        if reason is not None:
            session.discard_compaction(planned.generation + 1, decision.retained_from, reason)
            self.uow.save(session)
            logger.info("background compaction of %s discarded: %s", session_id, reason)
            return None
        report = self.compactor.complete(session, decision, written)
        self.compactor.downgrade_reasoning(session, True)
        self.uow.save(session)
        return report
