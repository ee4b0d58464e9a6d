"""Preparing the next request: prune, decide, fit, compact when due, downgrade reasoning.

`Preparer.prepare` is the command behind `prepare_request`: it loads the session, asks the
preparation policy what the request needs (`abridged.domain.preparation`), has the
`Compactor` carry it out, saves what was recorded, and builds the request's context. Where
a summary must be written, the pass saves what it did and a second pass, holding the
session's compaction lock (one compaction at a time per session), writes it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any
from uuid import UUID

import attrs

from abridged.application.appending import Appender
from abridged.application.background import BackgroundCompactions
from abridged.application.compactor import Compactor
from abridged.application.fitting import PreparationSteps
from abridged.application.inputs import as_message, as_session_id, optional_text
from abridged.application.notices import (
    ContextStatus,
    Notice,
    NoticeCallback,
    TokenBreakdown,
    breakdown_of,
    context_status,
)
from abridged.application.ports import CompactionReport, MetricNames
from abridged.application.service_ports import ServicePorts
from abridged.application.transcodings import encodable_json
from abridged.application.unit_of_work import UnitOfWork
from abridged.domain import planner
from abridged.domain.context import Context, build_context
from abridged.domain.errors import (
    ContextOverflowError,
    ContextTooSmallError,
    NothingToCompactError,
    RoleOrderError,
)
from abridged.domain.inputs import check_message_size
from abridged.domain.messages import JSON, Message, Role
from abridged.domain.planner import Decision
from abridged.domain.preparation import (
    PreparationPlan,
    downgrade_moment,
    plan_preparation,
    preparation_trigger,
    prune_after,
)
from abridged.domain.reply_shapes import is_paused_turn
from abridged.domain.session import Session
from abridged.domain.vocabulary import Trigger

__all__ = [
    "COUNT_TOKENS_SHARE",
    "PrepareCommands",
    "PreparedRequest",
    "Preparer",
    "emitter",
]

logger = logging.getLogger(__name__)

COUNT_TOKENS_SHARE = 0.9
"""Above this share of the budget, `complete` asks the provider to count before sending."""


@attrs.frozen
class _LockNeeded:
    """A first pass stopped where a summary must be written, having saved what it did."""

    pruned: int
    extra: tuple[str | None, int]
    """The per-turn content the first pass was given: the provider is asked once."""


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


class Preparer(PreparationSteps):
    """The request preparations of one service (see the module)."""

    def __init__(
        self,
        uow: UnitOfWork,
        ports: ServicePorts,
        compactor: Compactor,
        appender: Appender,
        *,
        defer: bool = False,
    ) -> None:
        self.uow = uow
        self.ports = ports
        self.compactor = compactor
        self.appender = appender
        self.defer = defer
        """`SessionsOptions.defer_compaction`."""

    def prepare(self, session_id: UUID, on_notice: NoticeCallback | None = None) -> PreparedRequest:
        """See `Sessions.prepare_request`."""
        notes: list[Notice] = []
        return self.finish(session_id, self.first_pass(session_id, notes), notes, on_notice)

    def append_and_prepare(
        self, session_id: UUID, parsed: Message, on_notice: NoticeCallback | None = None
    ) -> PreparedRequest:
        """See `Sessions.append_and_prepare`."""
        if parsed.role is Role.ASSISTANT:
            raise RoleOrderError("the next request needs a user (or system) message last")
        check_message_size(parsed, self.ports.max_message_bytes, encodable_json(parsed))
        counted = self.appender.counted_once(parsed)

        def append(session: Session) -> None:
            session.check_append(parsed)
            self.appender.append_counted(session, parsed, counted(), None, None, save=False)

        notes: list[Notice] = []
        try:
            done = self.first_pass(session_id, notes, append)
        except ContextTooSmallError:
            raise  # the message itself can never be sent: nothing is written
        except ContextOverflowError:
            # The request cannot fit, but the message can be kept, as `append_message`
            # would keep it.
            self.appender.append(session_id, parsed, None, None, counted=counted)
            raise
        return self.finish(session_id, done, notes, on_notice)

    def first_pass(
        self,
        session_id: UUID,
        notes: list[Notice],
        append: Callable[[Session], None] | None = None,
    ) -> PreparedRequest | _LockNeeded:
        """The preparation without the compaction lock: the request, or, where a summary
        must be written, what it did so far (saved: an appended message, a prune)."""

        def command() -> PreparedRequest | _LockNeeded:
            notes.clear()  # a pass run again after a concurrent write starts afresh
            session = self.uow.load(session_id)
            if append is not None:
                append(session)
            return self.prepared(session, self.ports.extra(session), notes, None, locked=False)

        return self.uow.run(session_id, command)

    def finish(
        self,
        session_id: UUID,
        done: PreparedRequest | _LockNeeded,
        notes: list[Notice],
        on_notice: NoticeCallback | None,
    ) -> PreparedRequest:
        """Tells the caller what the first pass did; when it stopped for a summary, runs the
        second pass holding the session's compaction lock, on the session as the first left
        it (the cached session: nothing is read or counted again)."""
        if on_notice is not None:
            for notice in notes:
                on_notice(notice)
        if isinstance(done, PreparedRequest):
            return done

        def command() -> PreparedRequest | _LockNeeded:
            session = self.uow.load(session_id)
            return self.prepared(session, done.extra, [], on_notice, locked=True)

        with self.uow.compaction_lock(session_id):
            prepared = self.uow.run(session_id, command)
        assert isinstance(prepared, PreparedRequest)  # a locked pass always finishes
        return attrs.evolve(
            prepared,
            notices=(*notes, *prepared.notices),
            pruned_outputs=done.pruned + prepared.pruned_outputs,
        )

    def prepared(
        self,
        session: Session,
        extra: tuple[str | None, int],
        notes: list[Notice],
        on_notice: NoticeCallback | None,
        *,
        locked: bool,
    ) -> PreparedRequest | _LockNeeded:
        """Carries out the preparation policy (`abridged.domain.preparation`) on the loaded
        session and saves it; without the compaction lock, stops (saving what it did) where
        a summary must be written."""
        paused = bool(session.entries) and is_paused_turn(session.entries[-1].message)
        if not session.awaiting_reply and not paused:
            raise RoleOrderError(
                "the next request needs a user message last (a prompt or tool results), or "
                "a paused reply to continue"
            )
        emit = emitter(notes, on_notice)
        extra_text, extra_tokens = extra
        trigger = preparation_trigger(bool(session.compaction_requested), session.turn_ended)
        put_off, (plan, pruned, reshown) = self.first_steps(
            session, extra_tokens, trigger, emit, locked=locked
        )
        decision, suppressed, deferred = plan.decision, plan.suppressed, plan.deferred
        if plan.overflow is not None:
            decision, more, refit = self.decide_to_fit(
                session, trigger, deferred, extra_tokens, emit
            )
            pruned += more
            reshown = reshown or refit
            deferred = None
            suppressed = planner.suppression(session, decision) if decision else None
        if decision is not None and not suppressed and not locked:
            # A summary must be written, one at a time per session: what this pass did is
            # saved, and the rest waits for the compaction lock.
            if session.pending_events:
                self.uow.save(session)
            return _LockNeeded(pruned, extra)
        report = None
        if decision is not None and suppressed:
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
        elif decision is not None:
            report = self.compactor.compact(session, decision, None, loud=False, emit=emit)
        if report is not None:
            pruned += report.outputs_pruned
        elif deferred is not None:
            # No compaction after all (held back, or cancelled by a hook): the prune runs alone.
            pruned += self.prune(
                session, prune_after(session, False, extra_tokens), extra_tokens, emit
            )
        self.compactor.downgrade_reasoning(
            session, downgrade_moment(pruned > 0 or reshown, report is not None)
        )
        if report is not None:
            # After the downgrade the compaction brought: the request as it will be sent.
            self.held_after(session, extra_tokens)
        if session.thinking_bound and extra_text:
            # Shown once, the content stays where it is: the reply's thinking binds to it.
            session.show_turn_context(extra_text, extra_tokens)
            extra_text, extra_tokens = None, 0
        if session.pending_events:
            self.uow.save(session)
        if put_off is not None:
            self._start_background(session, put_off, emit)
        if report is not None and self.ports.hooks is not None:
            self.ports.hooks.after_compaction(session.id, report)
        context = build_context(
            session, extra_text, extra_tokens, capabilities=self.ports.capabilities(session.model)
        )
        if context.estimate > context.budget:  # pragma: no cover - decide() guarantees the fit
            raise ContextOverflowError(
                f"the request needs {context.estimate} tokens, over the budget of {context.budget}",
                position=None,
                tokens=context.estimate,
                budget=context.budget,
            )
        return PreparedRequest(
            session_id=session.id,
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

    def first_steps(
        self,
        session: Session,
        extra_tokens: int,
        trigger: Trigger,
        emit: Callable[[Notice], None],
        *,
        locked: bool,
    ) -> tuple[Decision | None, tuple[PreparationPlan, int, bool]]:
        """The compaction put off (`put_off`), if any, and the steps before a compaction
        (`planned`): none when the compaction is put off, since the request goes as it
        stands and the compaction runs while the model answers."""
        first = None
        if self.defer and not locked:
            first = plan_preparation(session, extra_tokens, trigger=trigger)
        put_off = self.put_off(session, first) if first is not None else None
        if put_off is not None:
            return put_off, (PreparationPlan(trigger), 0, False)
        return None, self.planned(session, extra_tokens, trigger, emit, first)

    def put_off(self, session: Session, plan: PreparationPlan) -> Decision | None:
        """With `defer_compaction`, the compaction due at the threshold (`plan`, the session's
        as it stands) that the request does not need in order to fit (it fits as it stands,
        no loop guard holds it, nothing else is to run first): it is put off to the
        background. `None` when there is none."""
        background = self.appender.background
        if background.on_due is None or plan.trigger != "threshold":
            return None
        if not background.has_room(session.id):
            return None  # as many run as may: this one runs now, not after them
        decision = plan.decision
        if decision is None or plan.prune is not None or plan.overflow or plan.suppressed:
            return None
        return decision if decision.estimate <= decision.budget else None

    def _start_background(
        self, session: Session, decision: Decision, emit: Callable[[Notice], None]
    ) -> None:
        """Starts the compaction put off (`put_off`); one running already is left to run."""
        on_due = self.appender.background.on_due
        assert on_due is not None  # `put_off` checked
        on_due(session.id)
        emit(
            Notice(
                "compaction_deferred",
                "compaction due: it runs in the background, and this request goes as it "
                "stands (it fits)",
                decision.estimate,
            )
        )

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
        """`append_message` then `prepare_request`, with one load, the message counted once.

        The user's message and whatever the prepare records (a prune) are saved together, so
        a host's turn costs one write instead of two; when a summary must be written, the
        message is saved first and the compaction in a second write, holding the session's
        compaction lock (one compaction at a time). Errors are those of the two methods: an
        invalid message raises and saves nothing; when the request cannot fit
        (`ContextOverflowError`), the message is appended all the same, as it would be by
        the two calls, and the error raised.
        """
        parsed = as_message(message)
        return self.preparer.append_and_prepare(as_session_id(session_id), parsed, on_notice)

    def compact(self, session_id: UUID | str, instructions: str | None = None) -> CompactionReport:
        """Compacts now (`/compact`), whatever the threshold; `instructions` reach the
        summarizer as its focus.

        Fails loudly: `NothingToCompactError` when nothing can be summarized, and
        `CompactionFailedError` when the summarizer fails (the failure is recorded)."""
        session_id, focus = as_session_id(session_id), optional_text(instructions, "instructions")
        with self.uow.compaction_lock(session_id):
            return self.uow.run(session_id, lambda: self.preparer.manual(session_id, focus))

    def compact_soon(self, session_id: UUID | str) -> Future[CompactionReport | None]:
        """Starts a compaction off the user's turn, on a worker thread, when the session is
        past its `background_threshold_ratio` (or its threshold) and not already compacting.

        The summary is written while the conversation goes on, and applied only if what it
        covers is unchanged (otherwise `CompactionDiscarded` says why); messages appended
        meanwhile stay in the tail. The future's result is the report, or `None` when no
        compaction was due."""
        return self.background.schedule(as_session_id(session_id))
