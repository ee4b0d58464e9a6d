"""A request the provider refused as too long: what it said, and the recovery.

`Sessions.report_overflow` accepts the provider's error as the host caught it, or plain
numbers; `overflow_figures` turns either into the two figures the session records: the
provider's count of the request and its maximum (each may be unknown). `Overflows.recover`
records them, compacts (trigger `overflow`) and prepares the request to send instead;
`check_count` does the same when the provider's count of a prepared request is over budget.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from uuid import UUID

import attrs

from abridged.application.compactor import Compactor
from abridged.application.inputs import as_session_id
from abridged.application.notices import Notice, NoticeCallback
from abridged.application.ports import (
    CompactionReport,
    MetricNames,
    PromptTooLongError,
    ProviderError,
)
from abridged.application.preparing import PreparedRequest, Preparer, emitter
from abridged.application.service_ports import ServicePorts
from abridged.application.unit_of_work import UnitOfWork
from abridged.domain import planner
from abridged.domain.errors import NotAnOverflowError

__all__ = ["ErrorReader", "OverflowCommands", "Overflows", "overflow_figures"]

logger = logging.getLogger(__name__)

ErrorReader = Callable[[Exception], ProviderError]
"""Turns a provider SDK's exception into a `ProviderError` (an adapter's `translate_error`)."""


def overflow_figures(
    error_or_limit: Exception | int | None, tokens: int | None, read: ErrorReader | None
) -> tuple[int | None, int | None]:
    """(the provider's token count, its maximum) from an error or a maximum; raises
    `NotAnOverflowError` for an error that is not "prompt is too long", or for figures that
    are not positive whole numbers."""
    maximum: int | None
    if isinstance(error_or_limit, Exception):
        error = error_or_limit
        if not isinstance(error, PromptTooLongError) and read is not None:
            error = read(error)
        if not isinstance(error, PromptTooLongError):
            raise NotAnOverflowError(
                f"not a prompt-too-long error: {type(error_or_limit).__name__}: {error_or_limit}"
            ) from error_or_limit
        tokens = error.tokens if error.tokens is not None else tokens
        maximum = error.maximum
    else:
        maximum = error_or_limit
    for name, value in (("maximum", maximum), ("tokens", tokens)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value <= 0
        ):
            raise NotAnOverflowError(
                f"the provider's {name} must be a positive whole number, got {value!r}"
            )
    return tokens, maximum


class Overflows:
    """The overflow recoveries of one service (see the module)."""

    def __init__(
        self, uow: UnitOfWork, ports: ServicePorts, compactor: Compactor, preparer: Preparer
    ) -> None:
        self.uow = uow
        self.ports = ports
        self.compactor = compactor
        self.preparer = preparer

    def recover(
        self,
        session_id: UUID,
        tokens: int | None,
        maximum: int | None,
        on_notice: NoticeCallback | None = None,
    ) -> PreparedRequest:
        """Records the provider's figures, compacts (trigger `overflow`) holding the
        compaction lock, and prepares the request to send instead."""
        notes: list[Notice] = []
        emit = emitter(notes, on_notice)
        emit(
            Notice(
                "overflow",
                "the request was too long for the model"
                + (f" ({tokens} tokens)" if tokens else "")
                + "; compacting",
                tokens,
            )
        )
        with self.uow.compaction_lock(session_id):
            report = self.uow.run(
                session_id,
                lambda: self.compact(session_id, tokens, maximum, emit),
            )
        logger.warning(
            "session %s: provider overflow (%s tokens, maximum %s); compacted",
            session_id,
            tokens,
            maximum,
        )
        if report is not None and self.ports.hooks is not None:
            self.ports.hooks.after_compaction(session_id, report)
        prepared = self.preparer.prepare(session_id, on_notice)
        return attrs.evolve(prepared, notices=(*notes, *prepared.notices))

    def compact(
        self,
        session_id: UUID,
        tokens: int | None,
        maximum: int | None,
        emit: Callable[[Notice], None] | None = None,
    ) -> CompactionReport | None:
        """The command that records the overflow and compacts, run by the unit of work."""
        session = self.uow.load(session_id)
        session.report_overflow(tokens, maximum)
        reshown = self.preparer.reshow_for_window(session, "the provider enforces a smaller window")
        report = None
        decision = planner.decide(session, "overflow", self.ports.extra(session)[1])
        if decision is not None:
            report = self.compactor.compact(session, decision, None, loud=False, emit=emit)
        if decision is not None or reshown:
            # Messages shown otherwise change what later thinking was produced under.
            self.compactor.downgrade_reasoning(session, True)
        self.uow.save(session)
        return report


class OverflowCommands:
    """The service's commands for a request too long for the provider (mixed into
    `Sessions`)."""

    uow: UnitOfWork
    ports: ServicePorts
    overflows: Overflows
    read_provider_error: ErrorReader | None

    def report_overflow(
        self,
        session_id: UUID | str,
        error_or_limit: Exception | int | None = None,
        *,
        tokens: int | None = None,
        on_notice: NoticeCallback | None = None,
    ) -> PreparedRequest:
        """Recovers from the provider's "prompt is too long" on a request the host sent
        itself: records the provider's count (recalibrating the estimate, and adopting a
        smaller window the provider enforces), compacts (trigger `overflow`) and returns the
        request to send instead.

        `error_or_limit` is the provider's error (`PromptTooLongError`, or the SDK's own
        exception when the service reads that provider's errors: `bootstrap` wires the
        Anthropic SDK's `BadRequestError`), or the provider's maximum as a number; `tokens`
        is the provider's count of the rejected request, when known.

        Raises `NotAnOverflowError` (nothing recorded) for an error that is not an overflow,
        and `ContextOverflowError` when even the smallest request cannot fit.
        """
        session_id = as_session_id(session_id)
        tokens, maximum = overflow_figures(error_or_limit, tokens, self.read_provider_error)
        self.uow.session(session_id)  # an unknown or deleted session records nothing
        self.ports.metrics.add(MetricNames.OVERFLOWS, attributes={"source": "provider"})
        return self.overflows.recover(session_id, tokens, maximum, on_notice)

    def check_count(
        self,
        session_id: UUID | str,
        counted: int,
        *,
        on_notice: NoticeCallback | None = None,
    ) -> PreparedRequest | None:
        """Compares the provider's count of a prepared request (its count-tokens endpoint)
        with the budget. Over the budget, the estimate is recalibrated, the session
        compacted (trigger `overflow`, the window kept) and the request to send instead is
        returned; within it, `None`: send the request as prepared.

        Worth calling when `PreparedRequest.needs_count` is true: near the limit, where an
        estimate's small error decides whether the provider accepts the request."""
        if isinstance(counted, bool) or not isinstance(counted, int) or counted <= 0:
            raise NotAnOverflowError(f"a provider count is a positive number, got {counted!r}")
        session_id = as_session_id(session_id)
        if counted <= self.uow.session(session_id).limits.budget:
            return None
        self.ports.metrics.add(MetricNames.OVERFLOWS, attributes={"source": "count"})
        # Our own budget, not a provider maximum: recalibrate, keep the window.
        return self.overflows.recover(session_id, counted, None, on_notice)
