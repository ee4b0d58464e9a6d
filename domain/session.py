"""The `Session` aggregate: one conversation, its history as events, its context as a view.

History is never rewritten. The aggregate holds what the next request needs (system prompt,
tools, summary chunks, the retained tail) and records every decision as an event; the
decisions themselves are made by pure functions: `abridged.domain.planner` (compaction),
`abridged.domain.pruning` (tool outputs and reasoning), `abridged.domain.context` (the view).

Here are the commands: each checks, then records one event with `trigger_event`. The events
are declared in `abridged.domain.events`, each with its fields, versions and `apply` (the
whole change it makes to the state), and listed here under their own names: `Session.X` is
`events.X`, stored under the topic `abridged.domain.session:Session.X`. The commands that
reconfigure a session sit with their events in `abridged.domain.reconfiguration`, which
`Session` inherits. What the session holds, its queries and the upkeep of the retained tail's
indexes that `apply` methods call are `abridged.domain.state.SessionState`. Decisions are not
made here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias
from uuid import UUID

import attrs
from eventsourcing.domain import Aggregate

from abridged.domain import events
from abridged.domain.context import Entry, SummaryChunk, raw_estimate, render_summary
from abridged.domain.degradation import shaped
from abridged.domain.errors import InvalidMessageError
from abridged.domain.ledger import LedgerUpdate, changes, check_update
from abridged.domain.messages import Message, Role, WireBlock
from abridged.domain.planner import CompactionOutcome, Decision
from abridged.domain.pruning import DowngradedThinking, PrunedOutput, PrunePlan
from abridged.domain.reconfiguration import Reconfiguring
from abridged.domain.reply_shapes import leads_with_compaction
from abridged.domain.reshowing import ReshownMessage
from abridged.domain.settings import CompactionSettings
from abridged.domain.state import SessionState
from abridged.domain.tokens import (
    MESSAGE_OVERHEAD,
    CountText,
    message_block_tokens,
    text_block_tokens,
)
from abridged.domain.turn_context import TurnContexts
from abridged.domain.usage import Usage, compacted_first
from abridged.domain.validation import check_counts
from abridged.domain.vocabulary import CompactionStrategy, Fallback, SessionOrigin, Trigger
from abridged.domain.withdrawal import Withdrawals


class Session(Reconfiguring, TurnContexts, Withdrawals, Aggregate):
    """One conversation; every change is an event (state: `domain.state.SessionState`)."""

    id: UUID  # so a caller may choose the id (an annotation eventsourcing looks for)
    Event: TypeAlias = events.SessionEvent
    Started: TypeAlias = events.Started

    def __init__(
        self,
        model: str,
        context_window: int,
        reserved_output: int,
        settings: CompactionSettings,
        settings_fingerprint: str,
        system: str,
        tools: tuple[dict[str, Any], ...],
        system_tokens: int,
        tools_tokens: int,
        token_counter: str,
        metadata: dict[str, str],
        tags: tuple[str, ...],
        parent_id: UUID | None = None,
        origin: SessionOrigin | None = None,
        parent_summary: SummaryChunk | None = None,
        thinking_bound: bool = False,
        tokenizer_ratio: float = 1.0,
    ) -> None:
        """Starts a session (`Started`): `Session(...)` records the event with these fields,
        and `Started.apply` sets the state, as it does for every later replay."""

    # Appending messages.

    MessageAppended: TypeAlias = events.MessageAppended

    def append(
        self,
        message: Message,
        counts: Sequence[int],
        count: CountText,
        *,
        usage: Usage | None = None,
        request_estimate: int | None = None,
        reply: bool = False,
        model: str | None = None,
    ) -> None:
        """Appends a message whose blocks count `counts` tokens, shown as the settings and
        the window allow (`degradation.shaped`; `count` counts what is shown reduced).
        Nothing is recorded when it is invalid or cannot fit (`ContextTooSmallError`).

        A `reply` (by `model`, else the session's) may be incomplete (`check_append`); one that
        starts with the API's own compaction moves the view to it. A user message brings the
        system messages queued for it (a reconfiguration after the last reply) after it."""
        truncations, shown = shaped(
            message,
            counts,
            count,
            limits=self.limits,
            fixed=(self.system_tokens, self.tools_tokens, self.system_message_tokens),
            calibration=self.calibration,
            retained=self.entries,
        )
        tokens = MESSAGE_OVERHEAD + sum(counts)
        self.check_append(message, reply=reply)
        check_counts(message, tokens, shown, usage is not None)
        estimate = (request_estimate or self.raw_estimate()) if usage is not None else None
        entry = Entry(self.message_count, message, tokens, shown, truncations)
        self.trigger_event(
            self.MessageAppended,
            message=message,
            tokens=tokens,
            block_tokens=shown,
            truncations=truncations,
            usage=usage,
            request_estimate=estimate,
            saving=self.saving_of_next(entry),
            prefix_revision=self.prefix_revision if reply else None,
            model=(model or self.model) if reply else None,
            calibrates=not ((reply and leads_with_compaction(message)) or compacted_first(usage)),
        )
        if reply and leads_with_compaction(message):
            # The API compacted on its own (`compact_20260112`): it drops what came before.
            self.adopt_api_compaction(count)
        if message.role is Role.USER and self.queued_system:
            queued = self.queued_system
            for instruction in queued:
                counted = message_block_tokens(instruction, count)
                self.append(instruction, counted, count)
            self.trigger_event(self.QueuedSystemMessagesAppended, count=len(queued))

    # Compacting.

    CompactionThresholdHit: TypeAlias = events.CompactionThresholdHit

    def hit_threshold(self, decision: Decision) -> None:
        """Records the decision to compact (the estimate crossed the threshold, or a
        compaction was asked for)."""
        self.trigger_event(self.CompactionThresholdHit, decision=decision)

    CompactionFailed: TypeAlias = events.CompactionFailed

    def fail_compaction(self, summarizer: str, error: str, fallback: Fallback) -> None:
        """Records that the summarizer failed, and the fallback taken."""
        self.trigger_event(
            self.CompactionFailed, summarizer=summarizer, error=error, fallback=fallback
        )

    CompactionCompleted: TypeAlias = events.CompactionCompleted

    def complete_compaction(
        self,
        decision: Decision,
        *,
        text: str,
        tokens: int,
        model: str,
        strategy: CompactionStrategy,
        summarizer: str,
        summarizer_input_tokens: int = 0,
        summarizer_output_tokens: int = 0,
        ledger: LedgerUpdate | None = None,
        block: str | None = None,
        iterations: tuple[str, ...] = (),
        chained_revision: int | None = None,
        text_tokens: int | None = None,
    ) -> CompactionOutcome:
        """Replaces the messages before `decision.retained_from` by a summary chunk; with
        `ledger`, the facts ledger is updated first (`LedgerUpdated`)."""
        chunk, replaced = next_chunk(self, decision, text, tokens, model, block, chained_revision)
        chunk = attrs.evolve(chunk, text_tokens=text_tokens) if block is not None else chunk
        # The ledger first: the event's before and after (re-derived by an audit from the
        # state before each event) both count it as this compaction leaves it.
        if ledger is not None:
            self.update_ledger(ledger)
        before, at = self.estimate(), decision.retained_from
        summarized = min(at, self.message_count) - self.retained_from
        after, superseded = self.estimate_after(at, [*self.summaries[replaced:], chunk])
        self.trigger_event(
            self.CompactionCompleted,
            generation=chunk.generation,
            summary=chunk,
            replaced_chunks=replaced,
            retained_from=decision.retained_from,
            messages_summarized=summarized,
            tokens_before=before,
            tokens_after=after,
            strategy=strategy,
            summarizer=summarizer,
            summarizer_input_tokens=summarizer_input_tokens,
            summarizer_output_tokens=summarizer_output_tokens,
            summarizer_iterations=tuple(iterations),
            superseded_system=superseded,
        )
        return CompactionOutcome(chunk.generation, summarized, before, after)

    # The facts ledger.

    LedgerUpdated: TypeAlias = events.LedgerUpdated

    def update_ledger(self, update: LedgerUpdate) -> None:
        """Records the ledger's new entries; every entry it held and no longer holds must be
        named in `update.dropped`."""
        check_update(self.ledger, len(self.ledger_segments), update)
        # What changed, not the whole ledger: each update would otherwise store (and each
        # replay decode) every entry again.
        changed = changes(self.ledger, update)
        self.trigger_event(
            self.LedgerUpdated,
            changed=tuple(update.entries) if changed is None else changed,
            whole=changed is None,
            count=len(update.entries),
            text=update.text,
            tokens=update.tokens,
            dropped=tuple(update.dropped),
            consolidated=update.consolidated,
        )

    # Pruning and reasoning.

    ToolsPruned: TypeAlias = events.ToolsPruned

    def prune(self, plan: PrunePlan, outputs: tuple[PrunedOutput, ...]) -> None:
        """Moves the prune boundary forward; `outputs` carry the exact shown token counts."""
        if plan.boundary < self.prune_boundary:
            raise ValueError("the prune boundary never moves back")
        saved = sum(o.tokens_before - o.tokens_after for o in outputs)
        self.trigger_event(
            self.ToolsPruned,
            boundary=plan.boundary,
            strategy=self.settings.prune_strategy,
            outputs=outputs,
            tokens_before=self.estimate(),
            tokens_after=self.calibrated(self.raw_estimate() - saved),
            reason=plan.reason,
        )

    ReasoningDowngraded: TypeAlias = events.ReasoningDowngraded

    def downgrade_reasoning(self, blocks: tuple[DowngradedThinking, ...], reason: str) -> None:
        """Shows older thinking blocks dropped or as plain text from now on."""
        self.trigger_event(self.ReasoningDowngraded, blocks=blocks, reason=reason)

    # The mixins' events, listed so that eventsourcing takes each as the aggregate's own.
    SystemPromptChanged: TypeAlias = Reconfiguring.SystemPromptChanged
    SystemPromptInstructed: TypeAlias = Reconfiguring.SystemPromptInstructed
    ToolsInstructed: TypeAlias = Reconfiguring.ToolsInstructed
    QueuedSystemMessagesAppended: TypeAlias = Reconfiguring.QueuedSystemMessagesAppended
    ToolsChanged: TypeAlias = Reconfiguring.ToolsChanged
    ModelChanged: TypeAlias = Reconfiguring.ModelChanged
    SettingsChanged: TypeAlias = Reconfiguring.SettingsChanged
    TurnContextShown: TypeAlias = TurnContexts.TurnContextShown  # `abridged.domain.turn_context`
    TurnWithdrawn: TypeAlias = Withdrawals.TurnWithdrawn  # `abridged.domain.withdrawal`

    # The API's own compaction.

    ApiCompacted: TypeAlias = events.ApiCompacted

    def adopt_api_compaction(self, count: CountText) -> None:
        """Records that the API compacted on its own: the last message, a model reply that
        starts with a `compaction` block, leads the view from now on (`ApiCompacted`). Its
        chunk counts (`count`) as the text it is sent as once a compaction summarizes it."""
        position = self.message_count - 1
        reply = self.entries[-1].message if self.entries else None
        if reply is None or not leads_with_compaction(reply) or position <= self.retained_from:
            return
        block = reply.content[0]
        content = block.to_wire().get("content") if isinstance(block, WireBlock) else None
        text = content if isinstance(content, str) and content.strip() else "(compacted by the API)"
        first = self.summaries[0].first_position if self.summaries else self.retained_from
        shown = render_summary(text, first, position - 1, self.generation + 1)
        tokens = text_block_tokens(shown, count)
        chunk = SummaryChunk(text, first, position - 1, tokens, self.model, self.generation + 1)
        kept = self.entries[position - self.retained_from :]
        after = self.calibrated(
            raw_estimate(self, [chunk], kept, sum(e.shown_tokens for e in kept))
        )
        self.trigger_event(
            self.ApiCompacted,
            position=position,
            generation=chunk.generation,
            summary=chunk,
            tokens_before=self.estimate(),
            tokens_after=after,
        )

    CompactionDiscarded: TypeAlias = events.CompactionDiscarded

    def discard_compaction(self, generation: int, retained_from: int, reason: str) -> None:
        """Records that a summary written off the user's turn was not applied."""
        self.trigger_event(
            self.CompactionDiscarded,
            generation=generation,
            retained_from=retained_from,
            reason=reason,
        )

    # Guards, requests and warnings.

    CompactionSuppressed: TypeAlias = events.CompactionSuppressed

    def suppress(self, trigger: Trigger, reason: str, estimate: int) -> None:
        """Records a suppression once; the same reason again is not recorded twice."""
        if self.suppressed != reason:
            self.trigger_event(
                self.CompactionSuppressed, trigger=trigger, reason=reason, estimate=estimate
            )

    CompactionRequested: TypeAlias = events.CompactionRequested

    def request_compaction(self, reason: str) -> None:
        """Asks for a compaction when the turn has ended."""
        self.trigger_event(self.CompactionRequested, reason=reason)

    MessagesReshown: TypeAlias = events.MessagesReshown

    def reshow(self, messages: tuple[ReshownMessage, ...], cap: int, reason: str) -> None:
        """Shows retained messages reduced again (`reshowing.plan_reshowing`)."""
        if messages:
            self.trigger_event(self.MessagesReshown, messages=messages, cap=cap, reason=reason)

    OverflowReported: TypeAlias = events.OverflowReported

    def report_overflow(self, provider_tokens: int | None, maximum: int | None) -> None:
        self.trigger_event(
            self.OverflowReported,
            provider_tokens=provider_tokens,
            maximum=maximum,
            estimate=self.raw_estimate(),
        )

    DoubleCompactionConfigured: TypeAlias = events.DoubleCompactionConfigured

    def warn_double_compaction(self, provider: str, detail: str) -> None:
        """Records that the provider's own context management is on as well."""
        self.trigger_event(self.DoubleCompactionConfigured, provider=provider, detail=detail)

    Deleted: TypeAlias = events.Deleted

    def delete(self, reason: str) -> None:
        """Marks the session deleted; the service refuses every later command."""
        self.trigger_event(self.Deleted, reason=reason)


def next_chunk(
    state: SessionState,
    decision: Decision,
    text: str,
    tokens: int,
    model: str,
    block: str | None = None,
    chained_revision: int | None = None,
) -> tuple[SummaryChunk, int]:
    """The summary chunk a compaction to `decision` with `text` makes, and how many
    earlier chunks it folds in; `InvalidMessageError` when it would summarize nothing."""
    if not state.entries or decision.retained_from <= state.retained_from:
        raise InvalidMessageError("this compaction would summarize nothing")
    if not text.strip() and block is None:
        raise InvalidMessageError("a summary cannot be empty")
    # A chained block stands for everything before the kept turns, earlier chunks too.
    folds = decision.resummarize or chained_revision is not None
    replaced = len(state.summaries) if folds else 0
    first = state.summaries[0].first_position if replaced else state.retained_from
    last = decision.retained_from - 1
    chunk = SummaryChunk(
        text, first, last, tokens, model, state.generation + 1, block, chained_revision
    )
    return chunk, replaced
