"""Preparing the next request: prune, decide, compact when due, downgrade reasoning, fit.

`Preparer.prepare` is the command behind `prepare_request`: it loads the session, asks the
domain's planners what the request needs (`abridged.domain.planner`), has the `Compactor`
carry it out, saves what was recorded, and builds the request's context. A compaction holds
the session's compaction lock (one at a time per session). After the provider refused a
request as too long, `after_overflow` compacts (trigger `overflow`) and prepares again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from contextlib import suppress
from typing import Any
from uuid import UUID

import attrs

from abridged.application.appending import Appender
from abridged.application.background import BackgroundCompactions
from abridged.application.compactor import Compactor
from abridged.application.inputs import as_message, as_session_id
from abridged.application.notices import (
    ContextStatus,
    Notice,
    NoticeCallback,
    TokenBreakdown,
    breakdown_of,
    context_status,
)
from abridged.application.ports import CompactionReport, MetricNames, PromptTooLongError
from abridged.application.service_ports import ServicePorts
from abridged.application.unit_of_work import UnitOfWork
from abridged.domain import planner
from abridged.domain.context import Context, build_context
from abridged.domain.degradation import message_cap, plan_reshowing
from abridged.domain.errors import (
    ContextOverflowError,
    ContextTooSmallError,
    NothingToCompactError,
    RoleOrderError,
)
from abridged.domain.inputs import check_message_size
from abridged.domain.messages import JSON, Message, Role
from abridged.domain.planner import Decision
from abridged.domain.pruning import PrunePlan
from abridged.domain.session import Session
from abridged.domain.vocabulary import Trigger

__all__ = [
    "COUNT_TOKENS_SHARE",
    "PrepareCommands",
    "PreparedRequest",
    "Preparer",
    "emitter",
    "still_too_long",
]

logger = logging.getLogger(__name__)

COUNT_TOKENS_SHARE = 0.9
"""Above this share of the budget, `complete` asks the provider to count before sending."""


def still_too_long(error: PromptTooLongError, prepared: PreparedRequest) -> ContextOverflowError:
    """The error of a request the provider refused again after the session was compacted."""
    return ContextOverflowError(
        f"the provider still found the request too long after compacting: {error}",
        position=None,
        tokens=error.tokens or prepared.context.estimate,
        budget=prepared.context.budget,
    )


class _CompactionDueError(Exception):
    """A request needs a compaction: run again holding the session's compaction lock."""


@attrs.frozen
class PreparedRequest:
    """The context of the next request, and what it took to make it fit."""

    session_id: UUID
    model: str
    max_tokens: int
    context: Context
    compaction: CompactionReport | None
    compactions_so_far: int
    pruned_outputs: int = 0
    suppressed: str | None = None
    context_status: ContextStatus = "full"
    """`summarized` when older messages are stood for by summary chunks, else `full`."""
    notices: tuple[Notice, ...] = ()
    """What happened to the context while this request was prepared, in order."""
    breakdown: TokenBreakdown | None = None
    """Where the request's tokens go: system, tools, summary, kept messages, per-turn."""

    @property
    def needs_count(self) -> bool:
        """Whether the estimate is close enough to the budget that the provider should count
        the request before it is sent (see `Sessions.check_count`)."""
        return self.context.estimate >= COUNT_TOKENS_SHARE * self.context.budget


def emitter(notes: list[Notice], on_notice: NoticeCallback | None) -> Callable[[Notice], None]:
    """A notice's sink: kept in `notes`, and passed on to `on_notice` as it happens."""

    def emit(notice: Notice) -> None:
        notes.append(notice)
        if on_notice is not None:
            on_notice(notice)

    return emit


class Preparer:
    """The request preparations of one service (see the module)."""

    def __init__(
        self, uow: UnitOfWork, ports: ServicePorts, compactor: Compactor, appender: Appender
    ) -> None:
        self.uow = uow
        self.ports = ports
        self.compactor = compactor
        self.appender = appender

    def prepare(self, session_id: UUID, on_notice: NoticeCallback | None = None) -> PreparedRequest:
        """See `Sessions.prepare_request`."""
        try:
            return self.uow.run(
                session_id, lambda: self.prepared(session_id, on_notice=on_notice, locked=False)
            )
        except _CompactionDueError:
            with self.uow.compaction_lock(session_id):
                return self.uow.run(
                    session_id,
                    lambda: self.prepared(session_id, on_notice=on_notice, locked=True),
                )

    def append_and_prepare(
        self, session_id: UUID, parsed: Message, on_notice: NoticeCallback | None = None
    ) -> PreparedRequest:
        """See `Sessions.append_and_prepare`."""
        if parsed.role is Role.ASSISTANT:
            raise RoleOrderError("the next request needs a user (or system) message last")
        check_message_size(parsed, self.ports.max_message_bytes)
        counted = self.appender.counted_once(parsed)

        def command() -> PreparedRequest:
            session = self.uow.load(session_id)
            session.check_append(parsed)
            self.appender.append_counted(session, parsed, counted(), None, None, save=False)
            return self.prepared(session_id, session, on_notice, locked=False)

        try:
            return self.uow.run(session_id, command)
        except ContextTooSmallError:
            raise  # the message itself can never be sent: nothing is written
        except _CompactionDueError:
            # A compaction runs one at a time, holding the session's lock: the message is
            # saved on its own, and the request waits its turn (two writes, at compactions).
            self.appender.append(session_id, parsed, None, None)
            return self.prepare(session_id)
        except ContextOverflowError:
            self.appender.append(session_id, parsed, None, None)
            raise

    def prepared(
        self,
        session_id: UUID,
        loaded: Session | None = None,
        on_notice: NoticeCallback | None = None,
        *,
        locked: bool = True,
    ) -> PreparedRequest:
        session = loaded or self.uow.load(session_id)
        if not session.awaiting_reply:
            raise RoleOrderError(
                "the next request needs a user message last (a prompt or tool results)"
            )
        notes: list[Notice] = []
        # A pass that may stop to wait for the compaction lock tells the caller nothing until
        # it is sure to finish: the pass that runs after the wait tells it all.
        emit = emitter(notes, on_notice if locked else None)
        extra_text, extra_tokens = self.ports.extra(session)

        plan = planner.plan_prune(session, extra_tokens)
        deferred = planner.defer_to_compaction(plan)
        pruned = 0 if deferred else self.prune(session, plan, extra_tokens, emit)
        requested = session.compaction_requested and session.turn_ended
        trigger: Trigger = "requested" if requested else "threshold"
        try:
            decision = planner.decide(session, trigger, extra_tokens)
        except ContextOverflowError as error:
            decision, more = self.decide_to_fit(
                session, trigger, plan if deferred else None, extra_tokens, emit, error
            )
            pruned += more
            deferred = False
        report = None
        suppressed = None
        if decision is not None:
            suppressed = planner.suppression(session, decision)
            if suppressed:
                if session.suppressed != suppressed:
                    self.ports.metrics.add(
                        MetricNames.SUPPRESSIONS, attributes={"trigger": decision.trigger}
                    )
                    emit(
                        Notice(
                            "compaction_suppressed",
                            f"compaction held back: {suppressed}",
                            decision.estimate,
                        )
                    )
                session.suppress(decision.trigger, suppressed, decision.estimate)
            elif not locked:
                raise _CompactionDueError
            else:
                report = self.compactor.compact(session, decision, None, loud=False, emit=emit)
        if report is not None:
            pruned += report.outputs_pruned
        elif deferred:
            # No compaction after all (held back, or cancelled by a hook): the prune runs alone.
            plan = planner.plan_prune(session, extra_tokens)
            pruned = self.prune(session, plan, extra_tokens, emit)
        self.compactor.downgrade_reasoning(session, pruned > 0 or report is not None)
        if session.pending_events:
            self.uow.save(session)
        if report is not None and self.ports.hooks is not None:
            self.ports.hooks.after_compaction(session_id, report)
        if not locked and on_notice is not None:
            for notice in notes:
                on_notice(notice)
        context = build_context(session, extra_text, extra_tokens)
        if context.estimate > context.budget:  # pragma: no cover - decide() guarantees the fit
            raise ContextOverflowError(
                f"the request needs {context.estimate} tokens, over the budget of {context.budget}",
                position=None,
                tokens=context.estimate,
                budget=context.budget,
            )
        return PreparedRequest(
            session_id=session_id,
            model=session.model,
            max_tokens=session.reserved_output,
            context=context,
            compaction=report,
            compactions_so_far=session.generation,
            pruned_outputs=pruned,
            suppressed=suppressed,
            context_status=context_status(session),
            notices=tuple(notes),
            breakdown=breakdown_of(session, extra_tokens),
        )

    def decide_to_fit(
        self,
        session: Session,
        trigger: Trigger,
        deferred: PrunePlan | None,
        extra_tokens: int,
        emit: Callable[[Notice], None],
        overflow: ContextOverflowError,
    ) -> tuple[Decision | None, int]:
        """The decision when no tail fits as the session stands (`overflow`): with the prune
        put off for the compaction run first (nothing to cut, or no tail that fits with its
        outputs whole), then, as the last resort, every output before the last exchange shown
        by name (`planner.plan_fit`). Raises `overflow`'s kind when even that does not fit;
        what was recorded is then not saved. Returns the decision and the outputs pruned."""
        # Messages shown for a larger window (before a reconfigure, or before the provider's
        # smaller one was learned) are reduced to the window's cap first.
        if self.reshow_for_window(session, "the window is smaller than when it was shown"):
            with suppress(ContextOverflowError):
                return planner.decide(session, trigger, extra_tokens), 0
        pruned = self.prune(session, deferred, extra_tokens, emit)
        if deferred is not None:
            with suppress(ContextOverflowError):
                return planner.decide(session, trigger, extra_tokens), pruned
        fit = planner.plan_fit(session)
        if fit is None:
            raise overflow
        pruned += self.prune(session, fit, extra_tokens, emit)
        return planner.decide(session, trigger, extra_tokens), pruned

    def reshow_for_window(self, session: Session, reason: str) -> bool:
        """Reduces the retained messages shown over the cap of the session's current window
        (`degradation.plan_reshowing`); whether any was."""
        cap = message_cap(
            session.limits, session.system_tokens, session.tools_tokens, session.calibration
        )
        reshown = plan_reshowing(session.entries, cap, self.ports.counter.count)
        session.reshow(reshown, cap, reason)
        return bool(reshown)

    def prune(
        self,
        session: Session,
        plan: PrunePlan | None,
        extra_tokens: int,
        emit: Callable[[Notice], None],
    ) -> int:
        """Runs `plan` (when there is one) and tells the caller; how many outputs it pruned."""
        if plan is None:
            return 0
        before = session.estimate()
        pruned = self.compactor.prune(session, plan)
        if pruned:
            emit(
                Notice(
                    "pruned",
                    f"{pruned} older tool output(s) are shown shortened from now on",
                    before,
                    session.estimate(),
                    breakdown_of(session, extra_tokens),
                )
            )
        return pruned

    def manual(self, session_id: UUID, instructions: str | None) -> CompactionReport:
        session = self.uow.load(session_id)
        decision = planner.decide(session, "manual", self.ports.extra(session)[1])
        if decision is None:
            raise NothingToCompactError(
                "nothing can be compacted: only the last exchange is in the context"
            )
        report = self.compactor.compact(session, decision, instructions, loud=True)
        self.compactor.downgrade_reasoning(session, True)
        self.uow.save(session)
        if report is None:
            raise NothingToCompactError("a compaction hook cancelled the compaction")
        if self.ports.hooks is not None:
            self.ports.hooks.after_compaction(session_id, report)
        return report


class PrepareCommands:
    """The service's commands that prepare a request or compact (mixed into `Sessions`)."""

    uow: UnitOfWork
    preparer: Preparer
    background: BackgroundCompactions

    def prepare_request(
        self, session_id: UUID | str, *, on_notice: NoticeCallback | None = None
    ) -> PreparedRequest:
        """The context for the next model call: old tool outputs pruned and the session
        compacted first when its threshold is hit (or a compaction was requested).

        The result says whether the context is `full` or `summarized` and carries notices
        (pruned, compaction started / completed / failed / suppressed); `on_notice` is called
        with each as it happens, so a UI can show "compacting…" while the summary is written.

        Raises `ContextOverflowError` when no compaction can make it fit; nothing is saved.
        When a compaction is due, one runs at a time per session: concurrent requests wait
        for it (a background one included) and use its result.
        """
        return self.preparer.prepare(as_session_id(session_id), on_notice)

    def append_and_prepare(
        self,
        session_id: UUID | str,
        message: Message | Mapping[str, JSON] | Any,
        *,
        on_notice: NoticeCallback | None = None,
    ) -> PreparedRequest:
        """`append_message` then `prepare_request`, with one load and one transaction.

        The user's message and whatever the prepare records (a prune, a compaction) are saved
        together, so a host's turn costs one write instead of two. Errors are those of the two
        methods: an invalid message raises and saves nothing; when the request cannot fit
        (`ContextOverflowError`), the message is appended all the same, as it would be by the
        two calls, and the error raised.
        """
        parsed = as_message(message)
        return self.preparer.append_and_prepare(as_session_id(session_id), parsed, on_notice)

    def compact(self, session_id: UUID | str, instructions: str | None = None) -> CompactionReport:
        """Compacts now (`/compact`), whatever the threshold; `instructions` reach the
        summarizer as its focus.

        Fails loudly: `NothingToCompactError` when nothing can be summarized, and
        `CompactionFailedError` when the summarizer fails (the failure is recorded)."""
        session_id = as_session_id(session_id)
        with self.uow.compaction_lock(session_id):
            return self.uow.run(session_id, lambda: self.preparer.manual(session_id, instructions))

    def compact_soon(self, session_id: UUID | str) -> Future[CompactionReport | None]:
        """Starts a compaction off the user's turn, on a worker thread, when the session is
        past its `background_threshold_ratio` (or its threshold) and not already compacting.

        The summary is written while the conversation goes on, and applied only if what it
        covers is unchanged (otherwise `CompactionDiscarded` says why); messages appended
        meanwhile stay in the tail. The future's result is the report, or `None` when no
        compaction was due."""
        return self.background.schedule(as_session_id(session_id))
