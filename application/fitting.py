"""The steps of a request's preparation that change what the session shows before it is
compacted: the prune, and the fit of a request that does not fit as the session stands.

`PreparationSteps` carries out what the preparation policy (`abridged.domain.preparation`)
plans there, each step recorded on the loaded session. `Preparer` (`preparing`) runs them and
goes on to compact, downgrade reasoning and build the request.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress

from abridged.application.compactor import Compactor
from abridged.application.notices import Notice, breakdown_of
from abridged.application.service_ports import ServicePorts
from abridged.domain import planner
from abridged.domain.degradation import message_cap, plan_reshowing
from abridged.domain.errors import ContextOverflowError
from abridged.domain.planner import Decision
from abridged.domain.pruning import PrunePlan
from abridged.domain.session import Session
from abridged.domain.vocabulary import Trigger

__all__ = ["RESHOW_REASON", "PreparationSteps"]

RESHOW_REASON = "a message has less room than when shown (a smaller window or system messages)"


class PreparationSteps:
    """The steps before a preparation's compaction (see the module); `Preparer`'s base."""

    ports: ServicePorts
    compactor: Compactor

    def decide_to_fit(
        self,
        session: Session,
        trigger: Trigger,
        deferred: PrunePlan | None,
        extra_tokens: int,
        emit: Callable[[Notice], None],
    ) -> tuple[Decision | None, int, bool]:
        """The decision when no tail fits as the session stands: with the prune put off for
        the compaction run first (nothing to cut, or no tail that fits with its outputs whole),
        then every output before the last exchange shown by name (`planner.plan_fit`), then,
        as the last resort, a cut inside an open loop led by thinking (`cut_loop`). Raises
        `ContextOverflowError` when even that does not fit; what was recorded is then not
        saved. Returns the decision, the outputs pruned and whether messages were shown
        reduced again."""
        # Messages shown with more room than a message has now (a larger window, fewer system
        # messages beside them) are reduced to the current cap first.
        reshown = self.reshow_for_window(session, RESHOW_REASON)
        if reshown:
            with suppress(ContextOverflowError):
                return planner.decide(session, trigger, extra_tokens, cut_loop=False), 0, True
            deferred = None  # planned on the messages as they were shown before
        pruned = self.prune(session, deferred, extra_tokens, emit)
        if deferred is not None:
            with suppress(ContextOverflowError):
                decision = planner.decide(session, trigger, extra_tokens, cut_loop=False)
                return decision, pruned, reshown
        fit = planner.plan_fit(session)
        if fit is None:
            return planner.decide(session, trigger, extra_tokens), pruned, reshown
        pruned += self.prune(session, fit, extra_tokens, emit)
        return planner.decide(session, trigger, extra_tokens), pruned, reshown

    def reshow_for_window(self, session: Session, reason: str) -> bool:
        """Reduces the retained messages shown over the cap of the session's current window
        (`degradation.plan_reshowing`); whether any was."""
        cap = message_cap(
            session.limits,
            session.system_tokens,
            session.tools_tokens,
            session.calibration,
            system_messages=session.system_message_tokens,
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
