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

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Any
from uuid import UUID

import attrs
from eventsourcing.domain import Aggregate, event

from abridged.domain.context import Entry, SummaryChunk, calibrated, raw_estimate
from abridged.domain.errors import InvalidMessageError, InvalidSettingsError
from abridged.domain.indexes import (
    has_thinking,
    rebuilt_sums,
    recompute,
    saving_of,
    thinking_tokens,
)
from abridged.domain.ledger import LedgerEntry
from abridged.domain.messages import Message, RedactedThinkingBlock, Role, ThinkingBlock
from abridged.domain.planner import CompactionOutcome, Decision
from abridged.domain.pruning import DowngradedThinking, PrunedOutput, PrunePlan, output_tokens
from abridged.domain.replies import shown_reply
from abridged.domain.settings import CompactionSettings, Limits
from abridged.domain.tokens import REQUEST_OVERHEAD
from abridged.domain.truncation import Truncation
from abridged.domain.usage import Usage, moving_calibration, observed_ratio
from abridged.domain.validation import check_blocks, check_sequence
from abridged.domain.vocabulary import CompactionStrategy, Fallback, SessionOrigin, Trigger


@attrs.frozen
class LedgerUpdate:
    """A new state of the facts ledger, computed by the service at a compaction."""

    entries: tuple[LedgerEntry, ...]
    text: str
    tokens: int
    dropped: tuple[LedgerEntry, ...] = ()


class Session(Aggregate):
    """One conversation thread; every change to it is an event."""

    id: UUID  # so a caller may choose the id (an annotation eventsourcing looks for)
    class_version = 4
    """2: the state holds the incremental indexes of `abridged.domain.indexes`;
    3: and the host's metadata, tags and deletion mark;
    4: and the facts ledger (`ledger`, `ledger_text`, `ledger_tokens`) and `compacted_to`,
    the estimate the last compaction left."""

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """A snapshot from before the indexes: derive them from its retained tail."""
        state.update(recompute(state["entries"], state["settings"]).as_state())
        # Which events hold these messages is not known (0): snapshots keep their bodies.
        state["entry_versions"] = [0] * len(state["entries"])

    @staticmethod
    def upcast_v2_v3(state: dict[str, Any]) -> None:
        """Snapshots taken before sessions had metadata, tags or a deletion mark."""
        state["metadata"] = {}
        state["tags"] = []
        state["deleted"] = None

    @staticmethod
    def upcast_v3_v4(state: dict[str, Any]) -> None:
        """A snapshot taken before the ledger existed holds an empty one, and no record of
        what its last compaction left (the growth guard starts at its next compaction)."""
        state["ledger"] = []
        state["ledger_text"] = ""
        state["ledger_tokens"] = 0
        state["compacted_to"] = None

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
        self.tools: list[dict[str, Any]] = list(tools)
        self.system_tokens = system_tokens
        self.tools_tokens = tools_tokens
        self.token_counter = token_counter
        self.entries: list[Entry] = []
        # A session continuing another from its summary starts with that summary in view.
        self.summaries: list[SummaryChunk] = [parent_summary] if parent_summary else []
        self.message_count = 0
        self.generation = 0
        self.tail_tokens = 0
        self.calibration = 1.0
        self.prune_boundary = 0
        self.thinking_seen = False
        self.last_compaction_at = -1
        """`message_count` when the last compaction completed."""
        self.stalled_estimate: int | None = None
        """The estimate a compaction could not reduce enough; guards against loops."""
        self.compacted_to: int | None = None
        """The estimate the last compaction left (`tokens_after`); the next threshold
        compaction waits until the context has grown by `min_growth_share` since."""
        self.compaction_requested: str | None = None
        self.suppressed: str | None = None
        self.provider_window: int | None = None
        """The window the provider enforced when it was smaller than `context_window`."""
        # Indexes over the retained tail (`abridged.domain.indexes`), kept by the mutators.
        self.tool_ids: dict[str, int] = {}
        self.open_tool_ids: list[str] = []
        self.prompt_positions: list[int] = []
        self.thinking_positions: list[int] = []
        self.output_sums: list[int] = [0]
        self.saving_sums: list[int] = [0]
        self.thinking_sums: list[int] = [0]
        self.shown_messages: list[Message] = []
        """Each retained message as requests show it. Snapshots leave it out (it is made of
        the messages); a load derives it again."""
        self.entry_versions: list[int] = []
        """The version of the `MessageAppended` of each retained message (0: unknown), so a
        snapshot can point at the events that hold the messages instead of copying them."""
        self.metadata: dict[str, str] = dict(metadata)
        self.tags: list[str] = list(tags)
        self.deleted: str | None = None
        """Why the session was deleted; a deleted session takes no more commands."""
        self.ledger: list[LedgerEntry] = []
        self.ledger_text = ""
        """The ledger as requests show it (`abridged.domain.ledger.render_ledger`)."""
        self.ledger_tokens = 0

    def __deepcopy__(self, memo: dict[int, Any]) -> Session:
        # The service copies a cached session before each command. Every value the session
        # holds is immutable or replaced whole, never changed in place, so fresh containers
        # are enough: sharing the values keeps the copy cheap whatever the history's length.
        copy = object.__new__(type(self))
        copy.__dict__.update(
            {
                name: type(value)(value) if isinstance(value, list | dict) else value
                for name, value in self.__dict__.items()
            }
        )
        return copy

    @property
    def limits(self) -> Limits:
        window = self.context_window
        if self.provider_window is not None:
            window = min(window, self.provider_window)
        return Limits(window, self.reserved_output, self.settings)

    # What commands and the planners read (decisions: `abridged.domain.planner`).

    @property
    def retained_from(self) -> int:
        return self.entries[0].position if self.entries else self.message_count

    @property
    def awaiting_reply(self) -> bool:
        """Whether the last message is the user's, so a request can be built."""
        return bool(self.entries) and self.entries[-1].message.role is Role.USER

    @property
    def turn_ended(self) -> bool:
        """Whether the last message starts a new turn (the previous turn has ended)."""
        return bool(self.entries) and self.entries[-1].message.is_user_prompt

    def tool_ids_in_view(self) -> set[str]:
        return set(self.tool_ids)

    def raw_estimate(self) -> int:
        """The uncalibrated estimate of the next request: a sum of stored counts."""
        return raw_estimate(self)

    def calibrated(self, raw: int) -> int:
        return calibrated(self, raw)

    def estimate(self) -> int:
        """The estimate of the next request, calibrated by the provider's reported usage."""
        return calibrated(self, raw_estimate(self))

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
            session.entries.append(entry)
            session.entry_versions.append(self.originator_version)
            session.message_count += 1
            session.tail_tokens += entry.shown_tokens
            message = entry.message
            uses = message.tool_uses
            for use in uses:
                session.tool_ids[use.id] = entry.position
            session.open_tool_ids = [u.id for u in uses]
            if message.is_user_prompt:
                session.prompt_positions.append(entry.position)
            if has_thinking(entry):
                session.thinking_positions.append(entry.position)
            session.output_sums.append(session.output_sums[-1] + output_tokens(entry))
            saving = saving_of(session.entries, len(session.entries) - 1, session.settings)
            session.saving_sums.append(session.saving_sums[-1] + saving)
            session.thinking_sums.append(session.thinking_sums[-1] + thinking_tokens(entry))
            session.shown_messages.append(entry.shown_message)
            if any(
                isinstance(b, ThinkingBlock | RedactedThinkingBlock) for b in entry.message.content
            ):
                session.thinking_seen = True
            if self.usage is not None and self.request_estimate:
                session.calibration = moving_calibration(
                    session.calibration, self.usage.prompt_tokens, self.request_estimate
                )

    def check_append(self, message: Message, *, reply: bool = False) -> None:
        """Raises the `InvalidMessageError` that appending `message` would cause.

        A model `reply` is checked as requests will show it (`abridged.domain.replies`): one
        cut short or empty is recorded all the same, since the provider returned it."""
        check_blocks(shown_reply(message) if reply else message)
        previous = self.entries[-1].message if self.entries else None
        if previous is None and self.message_count:
            raise InvalidMessageError("the session's retained tail is empty")  # pragma: no cover
        check_sequence(previous, message, lambda: self.tool_ids)

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
        if len(block_tokens) != len(message.content):
            raise ValueError("block_tokens needs one count per block")
        if tokens < 0 or any(t < 0 for t in block_tokens):
            raise ValueError("token counts cannot be negative")
        if usage is not None and message.role is not Role.ASSISTANT:
            raise InvalidMessageError("only a model reply (assistant message) carries usage")
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
        if not self.entries or decision.retained_from <= self.retained_from:
            raise InvalidMessageError("this compaction would summarize nothing")
        if not text.strip():
            raise InvalidMessageError("a summary cannot be empty")
        replaced = len(self.summaries) if decision.resummarize else 0
        first = self.summaries[0].first_position if replaced else self.retained_from
        generation = self.generation + 1
        chunk = SummaryChunk(text, first, decision.retained_from - 1, tokens, model, generation)
        # The ledger first, so that the event's before and after both count it as this
        # compaction leaves it (what an audit re-derives from the state before each event).
        if ledger is not None:
            self.update_ledger(ledger)
        before = self.estimate()
        summarized = sum(1 for e in self.entries if e.position < decision.retained_from)
        kept = [e for e in self.entries if e.position >= decision.retained_from]
        summaries = [*self.summaries[replaced:], chunk]
        kept_tokens = sum(e.shown_tokens for e in kept)
        after = self.calibrated(raw_estimate(self, summaries, kept, kept_tokens))
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
        kept = {e.key for e in update.entries}
        said = {e.key for e in update.dropped}
        lost = [e for e in self.ledger if e.key not in kept and e.key not in said]
        if lost:
            raise ValueError(f"ledger entries dropped without being recorded: {lost[:3]}")
        if bool(update.text.strip()) != bool(update.entries):
            raise ValueError("a ledger's text is empty exactly when it has no entries")
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

    def replace_blocks(self, changes: Iterable[tuple[int, int, str | None, int]]) -> None:
        first = self.retained_from
        changed: set[int] = set()
        for position, block_index, text, tokens in changes:
            k = position - first
            before = self.entries[k]
            self.entries[k] = before.replaced(block_index, text, tokens)
            self.tail_tokens += self.entries[k].shown_tokens - before.shown_tokens
            self.shown_messages[k] = self.entries[k].shown_message
            changed.add(k)
        if not changed:
            return
        for k in changed:
            entry = self.entries[k]
            at = bisect_left(self.thinking_positions, entry.position)
            listed = at < len(self.thinking_positions)
            if listed and self.thinking_positions[at] == entry.position and not has_thinking(entry):
                del self.thinking_positions[at]
        # Sums after the first change shift; changes are rare moments (prunes, downgrades).
        start = min(changed)
        entries = self.entries
        settings = self.settings
        self.output_sums = rebuilt_sums(
            self.output_sums, entries, start, lambda k: output_tokens(entries[k]), changed
        )
        self.saving_sums = rebuilt_sums(
            self.saving_sums, entries, start, lambda k: saving_of(entries, k, settings), changed
        )
        self.thinking_sums = rebuilt_sums(
            self.thinking_sums, entries, start, lambda k: thinking_tokens(entries[k]), changed
        )

    def drop_before(self, position: int) -> None:
        """Leaves the messages before `position` out of the retained tail (and the indexes)."""
        drop = max(0, min(position - self.retained_from, len(self.entries)))
        dropped, self.entries = self.entries[:drop], self.entries[drop:]
        del self.entry_versions[:drop]
        self.tail_tokens -= sum(e.shown_tokens for e in dropped)
        for entry in dropped:
            for use in entry.message.tool_uses:
                self.tool_ids.pop(use.id, None)
        if not self.entries:
            self.open_tool_ids = []
        del self.prompt_positions[: bisect_left(self.prompt_positions, position)]
        del self.thinking_positions[: bisect_left(self.thinking_positions, position)]
        base = self.output_sums[drop]
        self.output_sums = [s - base for s in self.output_sums[drop:]]
        base = self.thinking_sums[drop]
        self.thinking_sums = [s - base for s in self.thinking_sums[drop:]]
        del self.shown_messages[:drop]
        # The new first message's calls are out of view: it counts no saving.
        first = self.saving_sums[drop + 1] if self.entries else self.saving_sums[drop]
        self.saving_sums = [0, *(s - first for s in self.saving_sums[drop + 1 :])]

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
        if fixed >= limits.budget:
            raise InvalidSettingsError(
                f"the system prompt and tools ({fixed} tokens) would not fit the budget of "
                f"{limits.budget} tokens"
            )
        uses_tools = any(e.message.tool_uses or e.message.tool_results for e in self.entries)
        if not tool_list and uses_tools:
            raise InvalidMessageError(
                "the context still holds tool calls and results, and the Messages API needs "
                "tools defined for them: keep at least one tool until they are compacted"
            )
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
