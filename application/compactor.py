"""Carrying out a session's compaction moments: prune, downgrade reasoning, compact.

The service decides when (`abridged.domain.planner`) and saves; a `Compactor` does what a
moment needs in between, on the loaded aggregate: it counts what pruning and downgrading
leave, asks the hooks, writes the summary (`abridged.application.summaries.SummaryWriter`),
computes the facts ledger, and records each step as the aggregate's event, with the
service's metrics, logs and notices. It works with the service's ports (`ServicePorts`) and
its unit of work, which saves a failed manual compaction before the error is raised.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import attrs

from abridged.application.ledgering import Ledgers
from abridged.application.notices import (
    Notice,
    breakdown_of,
)
from abridged.application.ports import (
    CompactionReport,
    HookVerdict,
    MetricNames,
    SentPrefix,
    SummarizerError,
)
from abridged.application.redaction import error_text, redact_messages
from abridged.application.service_ports import ServicePorts
from abridged.application.summaries import SummaryRequest, WrittenSummary
from abridged.application.unit_of_work import UnitOfWork
from abridged.domain import planner, thinking_plan
from abridged.domain.context import build_context
from abridged.domain.errors import (
    CompactionFailedError,
    RoleOrderError,
)
from abridged.domain.indexes import has_thinking
from abridged.domain.messages import Message, Role, ToolResultBlock, ToolUseBlock
from abridged.domain.model_switch import switch_reason_of, unreadable_thinking
from abridged.domain.planner import Decision
from abridged.domain.preparation import prune_after
from abridged.domain.pruning import DowngradedThinking, PrunedOutput, PrunePlan
from abridged.domain.session import Session
from abridged.domain.tokens import (
    TOOL_OVERHEAD,
    text_block_tokens,
)
from abridged.domain.vocabulary import Fallback

__all__ = ["Compactor"]

logger = logging.getLogger(__name__)


class Compactor:
    """The compaction moments of one service (see the module)."""

    def __init__(self, uow: UnitOfWork, ports: ServicePorts) -> None:
        self.uow = uow
        self.ports = ports
        self.ledgers = Ledgers(ports)

    def prune(self, session: Session, plan: PrunePlan) -> int:
        outputs = []
        for output in plan.outputs:
            text = output.text
            if output.policy == "summarize":
                text = self._summarize_output(session, output)
            tokens = TOOL_OVERHEAD + self.ports.counter.count(text)
            outputs.append(attrs.evolve(output, text=text, tokens_after=tokens))
        kept = tuple(o for o in outputs if o.tokens_after < o.tokens_before)
        if not kept or sum(o.tokens_before - o.tokens_after for o in kept) < plan.min_saving:
            # Counted exactly, the move saves less than the plan's estimate promised: not
            # worth breaking the cached prefix for.
            return 0
        session.prune(plan, kept)
        self.ports.metrics.add(MetricNames.PRUNED_OUTPUTS, len(kept))
        logger.info(
            "session %s: pruned %d tool output(s) before message %d",
            session.id,
            len(kept),
            plan.boundary,
        )
        return len(kept)

    def _summarize_output(self, session: Session, output: PrunedOutput) -> str:
        entry = next(e for e in session.entries if e.position == output.position)
        block = entry.message.content[output.block_index]
        started = time.perf_counter()
        # The output reaches the summarizer as what it is, a tool's result (after the call
        # that asked for it), never as a user's message.
        tool_use_id = getattr(block, "tool_use_id", "toolu_output")
        call = Message(Role.ASSISTANT, (ToolUseBlock(tool_use_id, output.tool_name, {}),))
        result = Message(
            Role.USER,
            (
                ToolResultBlock(
                    tool_use_id, getattr(block, "text", ""), getattr(block, "is_error", False)
                ),
            ),
        )
        try:
            summary = self.ports.summarizer.summarize(
                redact_messages(self.ports.redactor, (call, result)),
                max_tokens=160,
                session_model=session.model,
            )
        except SummarizerError as error:
            self._summarizer_latency(started, "error")
            said = self.ports.redactor.redact(str(error))
            logger.warning("session %s: tool output summary failed: %s", session.id, said)
            return f"[output of {output.tool_name} pruned; its summary failed: {said}]"
        self._summarizer_latency(started, "ok")
        text = self.ports.redactor.redact(summary.text)
        return f"[summary of the output of {output.tool_name}]\n{text}"

    def downgrade_reasoning(self, session: Session, moment: bool) -> None:
        # Reasoning changes old messages, which breaks the cached prefix: batch them with
        # pruning and compaction, unless enough has piled up to be worth a break of its own.
        # Thinking bound to its prefix goes only when earlier content changed anyway.
        if not moment and (
            thinking_plan.bound(session)
            or thinking_plan.downgradable_tokens(session) < session.limits.prune_min_tokens
        ):
            return
        blocks = thinking_plan.plan_downgrades(session)
        if not blocks:
            return
        worth = sum(b.tokens_before for b in blocks) >= session.limits.prune_min_tokens
        if not (moment or worth):
            return
        counted = tuple(_counted_downgrade(b, self.ports.counter.count) for b in blocks)
        policy = session.settings.reasoning_policy
        if thinking_plan.bound(session):
            reason = (
                f"their prefix changed (revision {session.prefix_revision}): the model binds "
                f"thinking to what came before it; policy {policy}"
            )
        else:
            reason = (
                f"older than the last {max(1, session.settings.reasoning_keep_turns)} turn(s); "
                f"policy {policy}"
            )
        session.downgrade_reasoning(counted, reason)

    def drop_unreadable(self, session: Session, producer: str) -> None:
        """At a switch from `producer` to the session's (new) model: the thinking the new
        model cannot read leaves the view (`abridged.domain.model_switch`): each block by the
        model that wrote it, `producer` (the leaving model) where none was recorded."""
        table = self.ports.model_capabilities
        blocks = unreadable_thinking(session, producer, session.model, table)
        if blocks:
            counted = tuple(_counted_downgrade(b, self.ports.counter.count) for b in blocks)
            reason = switch_reason_of(session, producer, session.model, table)
            session.downgrade_reasoning(counted, reason)

    def _summarizer_latency(self, started: float, outcome: str) -> None:
        self.ports.metrics.record(
            MetricNames.SUMMARIZER_LATENCY,
            time.perf_counter() - started,
            {"summarizer": self.ports.summarizer.name, "outcome": outcome},
        )

    def compact(
        self,
        session: Session,
        decision: Decision,
        instructions: str | None,
        *,
        loud: bool,
        emit: Callable[[Notice], None] | None = None,
    ) -> CompactionReport | None:
        started_compaction = self.start(session, decision, instructions, emit)
        if started_compaction is None:
            return None
        request, verdict = started_compaction
        trigger = {"trigger": decision.trigger}
        written: WrittenSummary
        result = "completed"
        if verdict.summary is not None and verdict.summary.strip():
            written = self.ports.writer.supplied(request, verdict.summary)
        else:
            started = time.perf_counter()
            try:
                written = self.ports.writer.write(request)
            except SummarizerError as error:
                self._summarizer_latency(started, "error")
                fallback: Fallback = "raise" if loud else "truncate"
                session.fail_compaction(
                    self.ports.summarizer.name, error_text(self.ports.redactor, error), fallback
                )
                if loud:
                    self.uow.save(session)
                    self.ports.metrics.add(
                        MetricNames.COMPACTIONS, attributes={**trigger, "outcome": "failed"}
                    )
                    raise CompactionFailedError(f"the summarizer failed: {error}") from error
                # Threshold compaction fails open: the session stays usable, and events say so.
                logger.warning(
                    "session %s: summarizer failed (%s); truncating",
                    session.id,
                    self.ports.redactor.redact(str(error)),
                )
                result = "fallback"
                if emit is not None:
                    emit(
                        Notice(
                            "compaction_failed",
                            f"the summary could not be written ({error}); older messages "
                            "were dropped from the context instead",
                        )
                    )
                written = self.ports.writer.fallback(request, error)
            else:
                self._summarizer_latency(started, "ok")
        return self.complete(session, decision, written, result, emit)

    def start(
        self,
        session: Session,
        decision: Decision,
        instructions: str | None,
        emit: Callable[[Notice], None] | None = None,
    ) -> tuple[SummaryRequest, HookVerdict] | None:
        """Asks the hooks, records the decision and says what to summarize; `None` when a
        hook cancelled (the suppression is recorded)."""
        messages = planner.messages_to_summarize(session, decision.retained_from)
        verdict = HookVerdict()
        trigger = {"trigger": decision.trigger}
        if self.ports.hooks is not None:
            verdict = self.ports.hooks.before_compaction(session.id, decision, messages) or verdict
            if verdict.cancel is not None and decision.estimate <= decision.budget:
                self.ports.metrics.add(
                    MetricNames.COMPACTIONS, attributes={**trigger, "outcome": "cancelled"}
                )
                session.suppress(
                    decision.trigger, f"cancelled by a hook: {verdict.cancel}", decision.estimate
                )
                return None
        if emit is not None:
            emit(
                Notice(
                    "compaction_started",
                    f"compacting: summarizing {len(messages)} earlier message(s)",
                    decision.estimate,
                )
            )
        session.hit_threshold(decision)
        return self._summary_request(session, decision, messages, instructions), verdict

    def complete(
        self,
        session: Session,
        decision: Decision,
        written: WrittenSummary,
        result: str = "completed",
        emit: Callable[[Notice], None] | None = None,
    ) -> CompactionReport:
        chained = written.chained_revision
        if chained is not None and chained != session.prefix_revision:
            # The prefix moved while the summary was written (a background compaction): the
            # block still leads, as an ordinary one, and the kept thinking goes.
            chained = None
        update = self.ledgers.update(session, decision)
        if update is not None and written.block is None and result == "completed":
            written = self.ledgers.unrepeated(session, decision, written, update)
        outcome = session.complete_compaction(
            decision,
            ledger=update,
            text=written.text,
            tokens=written.tokens,
            model=written.model,
            strategy=written.strategy,
            summarizer=written.summarizer,
            summarizer_input_tokens=written.input_tokens,
            summarizer_output_tokens=written.output_tokens,
            block=written.block,
            iterations=written.iterations,
            chained_revision=chained,
            text_tokens=written.text_tokens,
        )
        pruned = 0
        plan = prune_after(session, compacted=True)
        if chained is not None and session.estimate() <= decision.budget:
            # A prune would change the kept turns, and with them the prefix their thinking
            # is bound to, which the API's chained block just kept valid.
            plan = None
        if plan is not None:
            pruned = self.prune(session, plan)
        report = CompactionReport(
            outputs_pruned=pruned,
            generation=outcome.generation,
            trigger=decision.trigger,
            strategy=written.strategy,
            retained_from=decision.retained_from,
            messages_summarized=outcome.messages_summarized,
            tokens_before=outcome.tokens_before,
            tokens_after=outcome.tokens_after,
            turns_kept=decision.turns_kept,
        )
        self.ports.metrics.add(
            MetricNames.COMPACTIONS, attributes={"trigger": decision.trigger, "outcome": result}
        )
        logger.info(
            "session %s: compacted (%s, %s): %d message(s) summarized, %d -> %d tokens",
            session.id,
            decision.trigger,
            written.strategy,
            report.messages_summarized,
            report.tokens_before,
            report.tokens_after,
        )
        if emit is not None:
            emit(
                Notice(
                    "compaction_completed",
                    f"compacted: {report.messages_summarized} earlier message(s) summarized",
                    report.tokens_before,
                    report.tokens_after,
                    breakdown_of(session),
                )
            )
        return report

    def _summary_request(
        self,
        session: Session,
        decision: Decision,
        messages: tuple[Message, ...],
        instructions: str | None,
    ) -> SummaryRequest:
        earlier = tuple(session.summaries) if decision.resummarize else ()
        return SummaryRequest(
            decision=decision,
            messages=messages,
            earlier=earlier,
            first_position=earlier[0].first_position if earlier else session.retained_from,
            generation=session.generation + 1,
            session_model=session.model,
            folding_strategy=(
                "update" if session.settings.summary_strategy == "update" else "resummarize"
            ),
            include_thinking=session.settings.summarize_thinking,
            instructions=instructions,
            sent=self._sent_prefix(session, decision),
        )

    def _sent_prefix(self, session: Session, decision: Decision) -> SentPrefix | None:
        """What the session's requests were sent under, when a summarizer that writes over
        the exact prefix (the API's compaction) could keep the kept turns' thinking: the
        model binds thinking and a kept reply shows thinking produced under the prefix as it
        stands (nothing changed it since). `None` otherwise."""
        if not thinking_plan.bound(session) or not session.awaiting_reply:
            return None
        kept = [e for e in session.entries if e.position >= decision.retained_from]
        if not any(has_thinking(e) and e.revision == session.prefix_revision for e in kept):
            return None
        try:
            context = build_context(session, capabilities=self.ports.capabilities(session.model))
        except RoleOrderError:  # pragma: no cover - a compaction runs before a request
            return None
        update = self.ledgers.update(session, decision)
        ledger: tuple[str, ...] = ()
        if update is not None:
            earlier = () if update.consolidated else tuple(session.ledger_segments)
            ledger = tuple(t for t in (*earlier, update.text) if t)
        return SentPrefix(
            context, len(context.messages) - len(kept), session.prefix_revision, ledger
        )


def _counted_downgrade(
    block: DowngradedThinking, count: Callable[[str], int]
) -> DowngradedThinking:
    """The downgrade with its shown size. A short thinking block can count fewer tokens than
    its plain-text summary would; it is dropped instead, so a downgrade never grows a request
    that the planner already fitted to its budget."""
    if block.text is None:
        return attrs.evolve(block, tokens_after=0)
    tokens = text_block_tokens(block.text, count)
    if tokens >= block.tokens_before:
        return attrs.evolve(block, action="dropped", text=None, tokens_after=0)
    return attrs.evolve(block, tokens_after=tokens)
