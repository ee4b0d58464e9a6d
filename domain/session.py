"""The `Session` aggregate: one conversation, its history as events, its context as a view.

History is never rewritten. The aggregate holds what the next request needs (system prompt,
tools, summary chunks, the retained tail) and records every decision as an event; the
decisions themselves are made by pure functions: `abridged.domain.planner` (compaction),
`abridged.domain.pruning` (tool outputs and reasoning), `abridged.domain.context` (the view).

Why this module is long: every fact of the audit trail is an event nested on `Session`
(eighteen of them, each with its docstring and, where its command validates first, the
`apply` that mutates), and the incremental indexes (`abridged.domain.indexes`) are kept up to
date by those mutators. Decisions are not made here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from abridged.domain.context import Entry, SummaryChunk
from abridged.domain.indexes import (
    recompute,
)
from abridged.domain.ledger import LedgerEntry, LedgerUpdate, check_update
from abridged.domain.messages import Message
from abridged.domain.planner import CompactionOutcome, Decision
from abridged.domain.pruning import DowngradedThinking, PrunedOutput, PrunePlan
from abridged.domain.settings import CompactionSettings, Limits
from abridged.domain.state import SessionState
from abridged.domain.tokens import REQUEST_OVERHEAD
from abridged.domain.truncation import Truncation
from abridged.domain.usage import Usage, moving_calibration, observed_ratio
from abridged.domain.validation import (
    check_counts,
    check_reconfiguration,
)
from abridged.domain.vocabulary import CompactionStrategy, Fallback, SessionOrigin, Trigger


class Session(SessionState, Aggregate):
    """One conversation thread; every change to it is an event (its state and indexes:
    `abridged.domain.state.SessionState`)."""

    id: UUID  # so a caller may choose the id (an annotation eventsourcing looks for)

    class Started(Aggregate.Created):
        """A session began, with its model, window, settings, system prompt and tools, and
        the host's metadata and tags (for listing and filtering sessions); a session
        continuing another names its parent, how it began, and the parent's summary it
        starts from."""

        class_version = 3

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Sessions started before metadata and tags existed have neither."""
            state["metadata"] = {}
            state["tags"] = []

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            """Sessions stored before sessions could continue others had no parent."""
            state["parent_id"] = None
            state["origin"] = None
            state["parent_summary"] = None

        model: str
        context_window: int
        reserved_output: int
        settings: CompactionSettings
        settings_fingerprint: str
        system: str
        tools: tuple[dict[str, Any], ...]
        system_tokens: int
        tools_tokens: int
        token_counter: str
        metadata: dict[str, str]
        tags: tuple[str, ...]
        parent_id: UUID | None
        origin: SessionOrigin | None
        parent_summary: SummaryChunk | None

    @event(Started)
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
    ) -> None:
        self.model = model
        self.context_window = context_window
        self.reserved_output = reserved_output
        self.settings = settings
        self.system = system
        # Lists, not tuples: snapshots store state as JSON, which has no tuples.
        self.tools = list(tools)
        self.system_tokens = system_tokens
        self.tools_tokens = tools_tokens
        self.token_counter = token_counter
        self.metadata = dict(metadata)
        self.tags = list(tags)
        # A session continuing another from its summary starts with that summary in view.
        self.start_empty(parent_summary)

    # Appending messages.

    class MessageAppended(Aggregate.Event):
        """A message joined the history, counted once; a model reply carries its usage."""

        message: Message
        tokens: int
        block_tokens: tuple[int, ...]
        truncations: tuple[Truncation, ...]
        usage: Usage | None
        request_estimate: int | None

        def apply(self, session: Session) -> None:
            entry = Entry(
                session.message_count,
                self.message,
                self.tokens,
                tuple(self.block_tokens),
                tuple(self.truncations),
            )
            session.add_entry(entry, self.originator_version)
            if self.usage is not None and self.request_estimate:
                session.calibration = moving_calibration(
                    session.calibration, self.usage.prompt_tokens, self.request_estimate
                )

    def append(
        self,
        message: Message,
        *,
        tokens: int,
        block_tokens: tuple[int, ...],
        truncations: tuple[Truncation, ...] = (),
        usage: Usage | None = None,
        request_estimate: int | None = None,
        reply: bool = False,
    ) -> None:
        """Validates and appends a message; nothing is recorded when it is invalid.

        `block_tokens` are the counts of the blocks as shown (after `truncations`); `reply`
        marks a model reply, which may be incomplete (see `check_append`)."""
        self.check_append(message, reply=reply)
        check_counts(message, tokens, block_tokens, usage is not None)
        self.trigger_event(
            self.MessageAppended,
            message=message,
            tokens=tokens,
            block_tokens=tuple(block_tokens),
            truncations=truncations,
            usage=usage,
            request_estimate=request_estimate,
        )

    # Compacting.

    class CompactionThresholdHit(Aggregate.Event):
        """The estimate crossed the threshold (or a compaction was asked for): the decision."""

        decision: Decision

    @event(CompactionThresholdHit)
    def hit_threshold(self, decision: Decision) -> None:
        pass

    class CompactionFailed(Aggregate.Event):
        """The summarizer failed; the compaction falls back and says so."""

        summarizer: str
        error: str
        fallback: Fallback

    @event(CompactionFailed)
    def fail_compaction(self, summarizer: str, error: str, fallback: Fallback) -> None:
        pass

    class CompactionCompleted(Aggregate.Event):
        """Older messages were replaced in the context by a summary chunk."""

        generation: int
        summary: SummaryChunk
        replaced_chunks: int
        """How many earlier chunks the new one folds in (0 when additive)."""
        retained_from: int
        messages_summarized: int
        tokens_before: int
        tokens_after: int
        strategy: CompactionStrategy
        summarizer: str
        summarizer_input_tokens: int
        summarizer_output_tokens: int

        def apply(self, session: Session) -> None:
            session.generation = self.generation
            session.summaries = [*session.summaries[self.replaced_chunks :], self.summary]
            session.drop_before(self.retained_from)
            session.last_compaction_at = session.message_count
            made_progress = self.tokens_before - self.tokens_after >= session.limits.min_reduction
            session.stalled_estimate = None if made_progress else self.tokens_after
            session.compacted_to = self.tokens_after
            session.compaction_requested = None
            session.suppressed = None

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
    ) -> CompactionOutcome:
        """Replaces the messages before `decision.retained_from` by a summary chunk; with
        `ledger`, the facts ledger is updated first (`LedgerUpdated`)."""
        chunk, replaced = self.next_chunk(decision, text, tokens, model)
        generation = chunk.generation
        # The ledger first, so that the event's before and after both count it as this
        # compaction leaves it (what an audit re-derives from the state before each event).
        if ledger is not None:
            self.update_ledger(ledger)
        before = self.estimate()
        summarized = min(decision.retained_from, self.message_count) - self.retained_from
        after = self.estimate_after(decision.retained_from, [*self.summaries[replaced:], chunk])
        self.trigger_event(
            self.CompactionCompleted,
            generation=generation,
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
        )
        return CompactionOutcome(generation, summarized, before, after)

    # The facts ledger.

    class LedgerUpdated(Aggregate.Event):
        """The facts ledger changed at a compaction: the entries it holds now, how it reads,
        and every entry it dropped to stay within its budget."""

        entries: tuple[LedgerEntry, ...]
        text: str
        tokens: int
        dropped: tuple[LedgerEntry, ...]

        def apply(self, session: Session) -> None:
            session.ledger = list(self.entries)
            session.ledger_text = self.text
            session.ledger_tokens = self.tokens

    def update_ledger(self, update: LedgerUpdate) -> None:
        """Records the ledger's new entries; every entry it held and no longer holds must be
        named in `update.dropped`."""
        check_update(self.ledger, update)
        self.trigger_event(
            self.LedgerUpdated,
            entries=tuple(update.entries),
            text=update.text,
            tokens=update.tokens,
            dropped=tuple(update.dropped),
        )

    # Pruning and reasoning.

    class ToolsPruned(Aggregate.Event):
        """The prune boundary moved: older tool outputs are shown pruned from now on."""

        boundary: int
        strategy: str
        outputs: tuple[PrunedOutput, ...]
        tokens_before: int
        tokens_after: int
        reason: str

        def apply(self, session: Session) -> None:
            session.prune_boundary = self.boundary
            session.replace_blocks(
                (o.position, o.block_index, o.text, o.tokens_after) for o in self.outputs
            )

    def prune(self, plan: PrunePlan, outputs: tuple[PrunedOutput, ...]) -> None:
        """Moves the prune boundary forward; `outputs` carry the exact shown token counts."""
        if plan.boundary <= self.prune_boundary:
            raise ValueError("the prune boundary only moves forward")
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

    class ReasoningDowngraded(Aggregate.Event):
        """Older thinking blocks were dropped from requests or shown as plain text."""

        blocks: tuple[DowngradedThinking, ...]
        reason: str

    @event(ReasoningDowngraded)
    def downgrade_reasoning(self, blocks: tuple[DowngradedThinking, ...], reason: str) -> None:
        self.replace_blocks((b.position, b.block_index, b.text, b.tokens_after) for b in blocks)

    # Lifecycle: what the next request is made with may change mid-session.

    class SystemPromptChanged(Aggregate.Event):
        """The system prompt changed; the next request sends the new one."""

        system: str
        system_tokens: int

        def apply(self, session: Session) -> None:
            session.system = self.system
            session.system_tokens = self.system_tokens

    class ToolsChanged(Aggregate.Event):
        """The tool definitions changed; the next request sends the new ones."""

        tools: tuple[dict[str, Any], ...]
        tools_tokens: int

        def apply(self, session: Session) -> None:
            session.tools = list(self.tools)
            session.tools_tokens = self.tools_tokens

    class ModelChanged(Aggregate.Event):
        """The conversation moved to another model, with its window and output reservation."""

        model: str
        context_window: int
        reserved_output: int

        def apply(self, session: Session) -> None:
            session.model = self.model
            session.context_window = self.context_window
            session.reserved_output = self.reserved_output
            # A window the old model's provider enforced says nothing about the new model.
            session.provider_window = None

    class SettingsChanged(Aggregate.Event):
        """The compaction settings changed; later decisions use the new ones."""

        settings: CompactionSettings
        settings_fingerprint: str

        def apply(self, session: Session) -> None:
            session.settings = self.settings
            # The loop guards judged the old limits; the new ones start afresh.
            session.stalled_estimate = None
            session.suppressed = None
            # What pruning could save depends on the settings (tool policies): a rare event,
            # so the indexes are derived again from the retained tail.
            session.__dict__.update(recompute(session.entries, self.settings).as_state())

    def reconfigure(
        self,
        *,
        system: tuple[str, int] | None = None,
        tools: tuple[Sequence[dict[str, Any]], int] | None = None,
        model: tuple[str, int, int] | None = None,
        settings: CompactionSettings | None = None,
    ) -> None:
        """Changes the system prompt (text, tokens), tools (definitions, tokens), model
        (name, window, reserved output) or settings; one event for each that differs.

        Checks everything first: `InvalidSettingsError` when the new limits are inconsistent
        or the system prompt and tools alone would not fit, `InvalidMessageError` when tools
        would go while the context still holds tool calls. Nothing is recorded on an error."""
        name, window, reserved = model or (self.model, self.context_window, self.reserved_output)
        new_settings = settings or self.settings
        limits = Limits(window, reserved, new_settings)  # raises InvalidSettingsError
        system_text, system_tokens = system or (self.system, self.system_tokens)
        tool_list, tools_tokens = tools or (self.tools, self.tools_tokens)
        fixed = REQUEST_OVERHEAD + system_tokens + tools_tokens
        messages = (e.message for e in self.entries)
        check_reconfiguration(limits.budget, fixed, bool(tool_list), messages)
        if system is not None and system_text != self.system:
            self.trigger_event(
                self.SystemPromptChanged, system=system_text, system_tokens=system_tokens
            )
        if tools is not None and list(tool_list) != self.tools:
            self.trigger_event(
                self.ToolsChanged,
                tools=tuple(dict(t) for t in tool_list),
                tools_tokens=tools_tokens,
            )
        if model is not None and model != (self.model, self.context_window, self.reserved_output):
            self.trigger_event(
                self.ModelChanged, model=name, context_window=window, reserved_output=reserved
            )
        if settings is not None and settings != self.settings:
            self.trigger_event(
                self.SettingsChanged,
                settings=settings,
                settings_fingerprint=settings.fingerprint,
            )

    class CompactionDiscarded(Aggregate.Event):
        """A summary written off the user's turn was not applied: what it covered changed
        while it was written (another compaction won, or the session was reconfigured)."""

        generation: int
        retained_from: int
        reason: str

    @event(CompactionDiscarded)
    def discard_compaction(self, generation: int, retained_from: int, reason: str) -> None:
        pass

    # Guards, requests and warnings.

    class CompactionSuppressed(Aggregate.Event):
        """A compaction was due but did not run: a loop guard, or a hook cancelled it."""

        trigger: Trigger
        reason: str
        estimate: int

        def apply(self, session: Session) -> None:
            session.suppressed = self.reason

    def suppress(self, trigger: Trigger, reason: str, estimate: int) -> None:
        """Records a suppression once; the same reason again is not recorded twice."""
        if self.suppressed != reason:
            self.trigger_event(
                self.CompactionSuppressed, trigger=trigger, reason=reason, estimate=estimate
            )

    class CompactionRequested(Aggregate.Event):
        """Compaction was asked for mid-turn; it runs when the turn has ended."""

        reason: str

    @event(CompactionRequested)
    def request_compaction(self, reason: str) -> None:
        self.compaction_requested = reason

    class OverflowReported(Aggregate.Event):
        """The provider rejected a request as too long: its count recalibrates the estimate."""

        provider_tokens: int | None
        maximum: int | None
        estimate: int

        def apply(self, session: Session) -> None:
            if self.provider_tokens and self.estimate:
                observed = observed_ratio(self.provider_tokens, self.estimate)
                session.calibration = max(session.calibration, round(observed, 6))
            if self.maximum and session.reserved_output < self.maximum < session.context_window:
                # The provider's window counts; a misconfigured one would overflow again.
                session.provider_window = self.maximum

    def report_overflow(self, provider_tokens: int | None, maximum: int | None) -> None:
        self.trigger_event(
            self.OverflowReported,
            provider_tokens=provider_tokens,
            maximum=maximum,
            estimate=self.raw_estimate(),
        )

    class DoubleCompactionConfigured(Aggregate.Event):
        """A warning: the provider's own context management is on as well as this session's."""

        provider: str
        detail: str

    @event(DoubleCompactionConfigured)
    def warn_double_compaction(self, provider: str, detail: str) -> None:
        pass

    class Deleted(Aggregate.Event):
        """The host deleted the session: it takes no more commands and is no longer listed.
        Its earlier events stay in the store (see docs/embedding.md, "Deleting")."""

        reason: str

    @event(Deleted)
    def delete(self, reason: str) -> None:
        """Marks the session deleted; the service refuses every later command."""
        self.deleted = reason
