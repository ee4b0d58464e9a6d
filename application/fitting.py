"""The steps of a request's preparation that change what the session shows before it is
compacted: the prune, the reduction of prompts shown whole, and the fit of a request that
does not fit as the session stands.

`PreparationSteps` carries out what the preparation policy (`abridged.domain.preparation`)
plans there: the prune, the reduction of prompts shown whole that a compaction would
summarize (`abridged.domain.whole_prompts`), and, when no retained tail fits, the fit steps
(the facts ledger made smaller last, when no compaction can fit the request), each recorded
on the loaded session. `Preparer` (`preparing`) runs them and goes on to
compact, downgrade reasoning and build the request.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress

from abridged.application.compactor import Compactor
from abridged.application.notices import Notice, breakdown_of
from abridged.application.ports import MetricNames
from abridged.application.service_ports import ServicePorts
from abridged.domain import ledger, planner
from abridged.domain.cuts import ledger_fit, tail_cap
from abridged.domain.degradation import message_cap, salient_of
from abridged.domain.errors import ContextOverflowError
from abridged.domain.planner import Decision
from abridged.domain.preparation import PreparationPlan, plan_preparation, preparation_trigger
from abridged.domain.pruning import PrunePlan
from abridged.domain.reshowing import plan_reshowing
from abridged.domain.session import Session
from abridged.domain.vocabulary import Trigger
from abridged.domain.whole_prompts import PromptReduction

__all__ = ["PROMPT_REASON", "RESHOW_REASON", "TAIL_REASON", "PreparationSteps"]

RESHOW_REASON = (
    "a message has less room than when shown (a smaller window, system messages, or a prompt "
    "shown whole)"
)
PROMPT_REASON = (
    "a prompt shown whole is reduced to one message's cap: the context must shrink, and a "
    "compaction would summarize it"
)

TAIL_REASON = (
    "a tail no cut can shorten (replies holding the results of the server calls the one "
    "before made) outgrew the request: its messages are shown smaller"
)
TAIL_FIT_ROUNDS = 3
"""How many times a tail is reduced again when its counts came out above the plan."""


class PreparationSteps:
    """The steps before a preparation's compaction (see the module); `Preparer`'s base."""

    ports: ServicePorts
    compactor: Compactor

    def planned(
        self,
        session: Session,
        extra_tokens: int,
        trigger: Trigger,
        emit: Callable[[Notice], None],
        first: PreparationPlan | None = None,
    ) -> tuple[PreparationPlan, int, bool]:
        """Runs the preparation policy's steps before the compaction: the prune, then the
        reduction of prompts shown whole that the compaction due would summarize, planning
        again after each (from `first`, the plan of the session as it stands, when the caller
        made it already). Returns the plan, the outputs pruned and whether prompts were
        reduced."""
        plan = first or plan_preparation(session, extra_tokens, trigger=trigger)
        pruned = self.prune(session, plan.prune, extra_tokens, emit)
        stepped = plan.prune is not None
        if stepped:
            plan = plan_preparation(session, extra_tokens, trigger=trigger, pruned=True)
        if plan.reduce is None:
            return plan, pruned, False
        # What to prune and whether to compact are planned again on the prompts as reduced.
        reshown = self.reduce_prompts(session, plan.reduce)
        plan = plan_preparation(
            session, extra_tokens, trigger=trigger, pruned=stepped, reduced=True
        )
        pruned += self.prune(session, plan.prune, extra_tokens, emit)
        if plan.prune is not None:
            plan = plan_preparation(
                session, extra_tokens, trigger=trigger, pruned=True, reduced=True
            )
        return plan, pruned, reshown

    def held_after(self, session: Session, extra_tokens: int) -> None:
        """Records, with a compaction that left the request above the threshold, the loop
        guard that holds the next one back (`planner.suppression`): the request is then the
        same when prepared again with no new message, and preparing it writes nothing."""
        trigger = preparation_trigger(bool(session.compaction_requested), session.turn_ended)
        try:
            plan = plan_preparation(session, extra_tokens, trigger=trigger)
        except ContextOverflowError:  # pragma: no cover - the compaction made the request fit
            return
        if plan.decision is not None and plan.suppressed:
            session.suppress(plan.decision.trigger, plan.suppressed, plan.decision.estimate)
            self.ports.metrics.add(
                MetricNames.SUPPRESSIONS, attributes={"trigger": plan.decision.trigger}
            )

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
        a cut inside an open loop led by thinking (`cut_loop`), then, as the last resort, the
        facts ledger made smaller when no cut can fit the request (`fit_ledger`), and the
        messages of a tail no cut can shorten shown smaller (`fit_tail`). Raises
        `ContextOverflowError` when even that does not fit; what was recorded is then not
        saved. Returns the decision, the outputs pruned and whether earlier content changed
        (messages shown reduced again, the ledger made smaller)."""
        # Messages shown with more room than a message has now (a larger window, fewer system
        # messages beside them, a prompt shown whole) are reduced to the current cap first.
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
        if fit is not None:
            pruned += self.prune(session, fit, extra_tokens, emit)
        try:
            return planner.decide(session, trigger, extra_tokens), pruned, reshown
        except ContextOverflowError:
            # What follows changes earlier content (the ledger comes before every message):
            # on a model that binds thinking to its prefix, the thinking after it is
            # downgraded with it.
            if self.fit_ledger(session, extra_tokens):
                with suppress(ContextOverflowError):
                    return planner.decide(session, trigger, extra_tokens), pruned, True
            if not self.fit_tail(session, extra_tokens):
                raise
        try:
            return planner.decide(session, trigger, extra_tokens), pruned, True
        except ContextOverflowError:
            if not self.fit_ledger(session, extra_tokens):
                raise
        return planner.decide(session, trigger, extra_tokens), pruned, True

    def fit_ledger(self, session: Session, extra_tokens: int) -> bool:
        """Consolidates the facts ledger into what a request no compaction can fit leaves it
        (`cuts.ledger_fit`), its lowest-priority entries dropped, each named in
        `LedgerUpdated`: whether it did."""
        room = ledger_fit(session, extra_tokens)
        if room is None:
            return False
        session.update_ledger(ledger.consolidate(session.ledger, room, self.ports.counter.count))
        return True

    def fit_tail(self, session: Session, extra_tokens: int) -> bool:
        """Shows the messages of a tail no cut can shorten reduced to the cap that fits the
        request (`cuts.tail_cap`), recorded as `MessagesReshown`: whether any was. Counts
        drift a little from the plan, so it is planned again on what was shown, a few times
        at most."""
        salient = salient_of(session.settings)
        reshown = False
        for _ in range(TAIL_FIT_ROUNDS):
            found = tail_cap(session, self.ports.counter.count, extra_tokens)
            if found is None:
                break
            entries, cap = found
            planned = plan_reshowing(entries, cap, self.ports.counter.count, salient)
            if not planned:
                break
            session.reshow(planned, cap, TAIL_REASON)
            reshown = True
        return reshown

    def reduce_prompts(self, session: Session, reduction: PromptReduction) -> bool:
        """Shows the prompts of `reduction` at its cap (`whole_prompts.plan_prompt_reduction`):
        whether any was."""
        first = session.entries[0].position
        entries = [session.entries[p - first] for p in reduction.positions]
        reshown = plan_reshowing(
            entries, reduction.cap, self.ports.counter.count, salient_of(session.settings)
        )
        session.reshow(reshown, reduction.cap, PROMPT_REASON)
        return bool(reshown)

    def reshow_for_window(self, session: Session, reason: str) -> bool:
        """Reduces the retained messages shown over the cap of the session's current window
        (`reshowing.plan_reshowing`); whether any was."""
        cap = message_cap(
            session.limits,
            session.system_tokens,
            session.tools_tokens,
            session.calibration,
            system_messages=session.system_message_tokens,
        )
        # Sessions stored before prompts were shown whole reduce text as they did, without
        # the salient lines a cut at append keeps.
        salient = salient_of(session.settings) if session.settings.whole_prompts else (0, 1)
        reshown = plan_reshowing(session.entries, cap, self.ports.counter.count, salient)
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
