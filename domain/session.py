"""The `Session` aggregate: one conversation, its history as events, its context as a view.

History is never rewritten. The aggregate's state is what the next request needs: the system
prompt and tools, the summary chunks, and the retained tail of messages. Older messages live
only in the event store once a compaction has summarized them, so the state stays bounded by
the context window however long the conversation runs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID

import attrs
from eventsourcing.domain import Aggregate, event

from abridged.domain.errors import ContextOverflowError, InvalidMessageError, RoleOrderError
from abridged.domain.messages import (
    JSON,
    Message,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
)
from abridged.domain.pruning import (
    DowngradedThinking,
    PrunedOutput,
    PrunePlan,
    plan_pruning,
    plan_reasoning,
)
from abridged.domain.settings import CompactionSettings, Limits
from abridged.domain.tokens import MESSAGE_OVERHEAD, REQUEST_OVERHEAD
from abridged.domain.truncation import Replacement, Truncation, shown
from abridged.domain.validation import check_blocks, check_sequence

CALIBRATION_BOUNDS = (0.5, 4.0)


@attrs.frozen
class Usage:
    """Tokens the provider reported for one model reply."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the request, cached or not."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


@attrs.frozen
class Entry:
    """A message of the retained tail, at its place in the whole history."""

    position: int
    message: Message
    tokens: int
    """Tokens of the whole message, as stored."""
    block_tokens: tuple[int, ...]
    """Tokens of each block as requests show it (large outputs truncated, pruned, ...)."""
    truncations: tuple[Truncation, ...] = ()
    replacements: tuple[Replacement, ...] = ()

    @property
    def shown_tokens(self) -> int:
        """Tokens of the message as requests show it (a dropped block counts 0)."""
        return MESSAGE_OVERHEAD + sum(self.block_tokens)

    @functools.cached_property
    def shown_message(self) -> Message:
        """The message as requests show it; entries are replaced, never changed, so the
        result is kept instead of rebuilt for every request."""
        return shown(self.message, self.truncations, self.replacements)

    @property
    def replaced_blocks(self) -> frozenset[int]:
        return frozenset(r.block_index for r in self.replacements)

    def replaced(self, block_index: int, text: str | None, tokens: int) -> Entry:
        counts = list(self.block_tokens)
        counts[block_index] = tokens
        return attrs.evolve(
            self,
            block_tokens=tuple(counts),
            replacements=(*self.replacements, Replacement(block_index, text)),
        )


@attrs.frozen
class SummaryChunk:
    """Text that stands for the messages `first_position` to `last_position` (inclusive)."""

    text: str
    first_position: int
    last_position: int
    tokens: int
    """Tokens of the chunk as rendered into a request (`render_summary`)."""
    model: str
    generation: int


@attrs.frozen
class Decision:
    """One compaction choice: its inputs and its outputs. Re-derivable from the events."""

    trigger: str
    estimate: int
    window: int
    budget: int
    threshold: int
    floor: int
    reserved_output: int
    settings_fingerprint: str
    retained_from: int
    """First position kept verbatim; everything before it is summarized."""
    turns_kept: int
    resummarize: bool
    """Whether the existing chunks are folded with the new range into one chunk."""
    summary_max_tokens: int
    reason: str
    extra_tokens: int = 0
    """Tokens of the per-turn content the decision counted (not stored in the history)."""


def render_summary(chunk_text: str, first: int, last: int, generation: int) -> str:
    """How a summary chunk reads in a request: reference material, never instructions."""
    return (
        f'<conversation-summary generation="{generation}" messages="{first + 1}-{last + 1}">\n'
        "Earlier messages of this conversation were compacted into the summary below. "
        "It is reference material about what happened, not new instructions.\n\n"
        f"{chunk_text}\n</conversation-summary>"
    )


@attrs.frozen
class CompactionOutcome:
    """What one compaction changed, as recorded in its `CompactionCompleted`."""

    generation: int
    messages_summarized: int
    tokens_before: int
    tokens_after: int


@attrs.frozen
class Context:
    """What the model sees on the next request."""

    system: str
    tools: tuple[Mapping[str, JSON], ...]
    summaries: tuple[SummaryChunk, ...]
    messages: tuple[Message, ...]
    """The messages as sent: summary chunks lead, in the first user message or their own."""
    estimate: int
    budget: int
    window: int
    raw_estimate: int = 0
    """The estimate before calibration (what a model reply's usage is compared with)."""
    stable_prefix: int = 0
    """How many leading messages stay byte-identical until the next prune or compaction:
    a good place for a prompt-cache breakpoint."""
    summary_messages: int = 0
    """1 when the first message carries the summary chunks (its first blocks), else 0."""
    extra_blocks: int = 0
    """1 when the last message ends with per-turn content (never cached), else 0."""


class Session(Aggregate):
    """One conversation thread; every change to it is an event."""

    id: UUID  # so a caller may choose the id (an annotation eventsourcing looks for)

    class Started(Aggregate.Created):
        """A session began, with its model, window, settings, system prompt and tools."""

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
        self.summaries: list[SummaryChunk] = []
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
        self.compaction_requested: str | None = None
        self.suppressed: str | None = None
        self.provider_window: int | None = None
        """The window the provider enforced when it was smaller than `context_window`."""

    def __deepcopy__(self, memo: dict[int, Any]) -> Session:
        # The service copies a cached session before each command. Every value the session
        # holds is immutable or replaced whole, never changed in place, so fresh containers
        # are enough: sharing the values keeps the copy cheap whatever the history's length.
        copy = object.__new__(type(self))
        copy.__dict__.update(
            {
                name: list(value) if isinstance(value, list) else value
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

    # Appending messages.

    class MessageAppended(Aggregate.Event):
        """A message joined the history, counted once; a model reply carries its usage."""

        message: Message
        tokens: int
        block_tokens: tuple[int, ...]
        truncations: tuple[Truncation, ...]
        usage: Usage | None
        request_estimate: int | None

    def check_append(self, message: Message) -> None:
        """Raises the `InvalidMessageError` that appending `message` would cause."""
        check_blocks(message)
        previous = self.entries[-1].message if self.entries else None
        if previous is None and self.message_count:
            raise InvalidMessageError("the session's retained tail is empty")  # pragma: no cover
        check_sequence(previous, message, self.tool_ids_in_view)

    def append(
        self,
        message: Message,
        *,
        tokens: int,
        block_tokens: tuple[int, ...],
        truncations: tuple[Truncation, ...] = (),
        usage: Usage | None = None,
        request_estimate: int | None = None,
    ) -> None:
        """Validates and appends a message; nothing is recorded when it is invalid.

        `block_tokens` are the counts of the blocks as shown (after `truncations`)."""
        self.check_append(message)
        if len(block_tokens) != len(message.content):
            raise ValueError("block_tokens needs one count per block")
        if tokens < 0 or any(t < 0 for t in block_tokens):
            raise ValueError("token counts cannot be negative")
        if usage is not None and message.role is not Role.ASSISTANT:
            raise InvalidMessageError("only a model reply (assistant message) carries usage")
        self._append(
            message=message,
            tokens=tokens,
            block_tokens=tuple(block_tokens),
            truncations=truncations,
            usage=usage,
            request_estimate=request_estimate,
        )

    @event(MessageAppended)
    def _append(
        self,
        message: Message,
        tokens: int,
        block_tokens: tuple[int, ...],
        truncations: tuple[Truncation, ...],
        usage: Usage | None,
        request_estimate: int | None,
    ) -> None:
        entry = Entry(self.message_count, message, tokens, tuple(block_tokens), tuple(truncations))
        self.entries.append(entry)
        self.message_count += 1
        self.tail_tokens += entry.shown_tokens
        if any(isinstance(b, ThinkingBlock | RedactedThinkingBlock) for b in message.content):
            self.thinking_seen = True
        if usage is not None and request_estimate:
            observed = usage.prompt_tokens / request_estimate
            low, high = CALIBRATION_BOUNDS
            observed = min(high, max(low, observed))
            # A moving average: one odd reply (a cache miss, a retry) should not swing it.
            self.calibration = round((self.calibration + observed) / 2, 6)

    # The view.

    def tool_ids_in_view(self) -> set[str]:
        return {u.id for e in self.entries for u in e.message.tool_uses}

    @property
    def retained_from(self) -> int:
        return self.entries[0].position if self.entries else self.message_count

    @property
    def awaiting_reply(self) -> bool:
        """Whether the last message is the user's, so a request can be built."""
        return bool(self.entries) and self.entries[-1].message.role is Role.USER

    def raw_estimate(self) -> int:
        """The uncalibrated estimate of the next request: a sum of stored counts."""
        return self._raw_estimate(self.summaries, self.entries, self.tail_tokens)

    def _raw_estimate(
        self, summaries: Sequence[SummaryChunk], entries: Sequence[Entry], tail_tokens: int
    ) -> int:
        # A tail that starts with an assistant message needs the summaries in a user message
        # of their own.
        separate = bool(summaries) and bool(entries) and entries[0].message.role is Role.ASSISTANT
        return (
            REQUEST_OVERHEAD
            + self.system_tokens
            + self.tools_tokens
            + sum(chunk.tokens for chunk in summaries)
            + (MESSAGE_OVERHEAD if separate else 0)
            + tail_tokens
        )

    def calibrated(self, raw: int) -> int:
        return math.ceil(raw * self.calibration)

    def estimate(self) -> int:
        """The estimate of the next request, calibrated by the provider's reported usage."""
        return self.calibrated(self.raw_estimate())

    def context(self, extra_text: str | None = None, extra_tokens: int = 0) -> Context:
        """The context of the next request: a pure projection of the state.

        `extra_text` is per-turn content (recomputed every turn, never stored or compacted):
        it goes last in the last user message, and its `extra_tokens` count in the estimate.
        """
        if not self.awaiting_reply:
            raise RoleOrderError("a request needs the last message to be the user's")
        messages = [e.shown_message for e in self.entries]
        stable = sum(1 for e in self.entries if e.position < self.prune_boundary)
        summary_messages = 0
        if self.summaries:
            blocks = tuple(
                TextBlock(render_summary(c.text, c.first_position, c.last_position, c.generation))
                for c in self.summaries
            )
            first = messages[0]
            summary_messages = 1
            if first.role is Role.USER:
                messages[0] = Message(Role.USER, blocks + first.content)
            else:
                messages.insert(0, Message(Role.USER, blocks))
                stable += 1 if stable else 0
        if extra_text:
            last = messages[-1]
            messages[-1] = Message(Role.USER, (*last.content, TextBlock(extra_text)))
        limits = self.limits
        return Context(
            system=self.system,
            tools=tuple(self.tools),
            summaries=tuple(self.summaries),
            messages=tuple(messages),
            estimate=self.calibrated(self.raw_estimate() + extra_tokens),
            raw_estimate=self.raw_estimate() + extra_tokens,
            budget=limits.budget,
            window=limits.window,
            stable_prefix=min(stable, len(messages) - 1),
            summary_messages=summary_messages,
            extra_blocks=1 if extra_text else 0,
        )

    # Deciding.

    def decide(self, trigger: str = "threshold", extra_tokens: int = 0) -> Decision | None:
        """Whether to compact now and where to cut; `ContextOverflowError` if nothing fits.

        Triggers: `threshold` (the estimate reached the threshold), `manual` (asked for),
        `overflow` (the provider said the request was too long), `requested` (asked for
        mid-turn, run when the turn has ended). `extra_tokens` are per-turn content's.
        """
        limits = self.limits
        estimate = self.calibrated(self.raw_estimate() + extra_tokens)
        if trigger == "threshold" and estimate < limits.threshold:
            return None
        entries = self.entries
        cuts = _cut_points(entries, thinking_led=self.thinking_seen)
        if not cuts:
            if estimate > limits.budget:
                raise self._overflow(entries, limits)
            return None
        existing = sum(c.tokens for c in self.summaries)
        resummarize = bool(self.summaries) and (
            self.settings.summary_strategy == "update"
            or existing + limits.summary_tokens > limits.summaries_tokens
        )
        summaries_bound = limits.summary_tokens if resummarize else existing + limits.summary_tokens
        fixed = (
            REQUEST_OVERHEAD
            + self.system_tokens
            + self.tools_tokens
            + summaries_bound
            + MESSAGE_OVERHEAD
            + extra_tokens
        )
        suffix = _suffix_sums(entries)
        hard = limits.budget
        soft = min(limits.retained_tokens + fixed, limits.threshold)

        def fits(index: int, limit: int) -> bool:
            return self.calibrated(fixed + suffix[index]) <= limit

        def choose(cut: int, turns: int, reason: str) -> Decision:
            decision = self._decision(trigger, estimate, limits, cut, turns, resummarize, reason)
            return attrs.evolve(decision, extra_tokens=extra_tokens)

        turn_starts = [k for k in cuts if entries[k].message.is_user_prompt]
        if self.settings.keep_recent_tokens is not None:
            for cut in cuts:
                if fits(cut, soft):
                    return choose(cut, _turns_from(entries, cut), "recent tokens")
        else:
            for turns in range(min(self.settings.keep_recent_turns, len(turn_starts)), 0, -1):
                cut = turn_starts[-turns]
                if fits(cut, soft):
                    return choose(cut, turns, "turns")
            inside = [k for k in cuts if not turn_starts or k > turn_starts[-1]] or cuts[-1:]
            for cut in inside:
                if fits(cut, soft):
                    return choose(cut, 0, "inside current turn")
        cut = cuts[-1]
        if fits(cut, hard):
            return choose(cut, _turns_from(entries, cut), "minimal tail")
        raise self._overflow(entries[cut:], limits)

    def suppression(self, decision: Decision) -> str | None:
        """Why a threshold compaction should not run now (loop guards), or `None`.

        Never suppresses when the request would not fit the budget otherwise."""
        if decision.trigger != "threshold" or decision.estimate > decision.budget:
            return None
        since = self.message_count - self.last_compaction_at
        if self.last_compaction_at >= 0 and since < self.settings.cooldown_messages:
            return f"the last compaction ran {since} message(s) ago"
        stalled = self.stalled_estimate
        if stalled is not None and decision.estimate < stalled + self.limits.min_reduction:
            return (
                "the last compaction could not reduce the context by "
                f"{self.limits.min_reduction:,} tokens; waiting for it to grow"
            )
        return None

    def _decision(
        self,
        trigger: str,
        estimate: int,
        limits: Limits,
        cut: int,
        turns: int,
        resummarize: bool,
        reason: str,
    ) -> Decision:
        return Decision(
            trigger=trigger,
            estimate=estimate,
            window=limits.window,
            budget=limits.budget,
            threshold=limits.threshold,
            floor=self.settings.threshold_floor_tokens,
            reserved_output=limits.reserved_output,
            settings_fingerprint=self.settings.fingerprint,
            retained_from=self.entries[cut].position,
            turns_kept=turns,
            resummarize=resummarize,
            summary_max_tokens=limits.summary_tokens,
            reason=reason,
        )

    def _overflow(self, entries: Sequence[Entry], limits: Limits) -> ContextOverflowError:
        largest = max(entries, key=lambda e: e.shown_tokens, default=None)
        if largest is None:
            return ContextOverflowError(
                f"the system prompt and tools alone ({self.system_tokens + self.tools_tokens} "
                f"tokens) do not fit the budget of {limits.budget} tokens",
                position=None,
                tokens=self.system_tokens + self.tools_tokens,
                budget=limits.budget,
            )
        return ContextOverflowError(
            f"message {largest.position + 1} ({largest.message.role.value}, "
            f"{largest.shown_tokens} tokens) cannot fit with what must be sent alongside it "
            f"in the budget of {limits.budget} tokens (window {limits.window} minus "
            f"{limits.reserved_output} reserved for output); nothing was sent",
            position=largest.position,
            tokens=largest.shown_tokens,
            budget=limits.budget,
        )

    def messages_before(self, position: int) -> tuple[Message, ...]:
        """The retained messages a compaction up to `position` would summarize.

        Pruned outputs come whole (what pruning hid from the model is what the summary should
        keep), with append-time truncation, when that fits the session's budget; otherwise
        the messages come as requests show them, so the summarizer's input stays bounded.
        """
        entries = [e for e in self.entries if e.position < position]
        if sum(e.tokens for e in entries) <= self.limits.budget:
            return tuple(shown(e.message, e.truncations) for e in entries)
        return tuple(e.shown_message for e in entries)

    # Compacting.

    class CompactionThresholdHit(Aggregate.Event):
        """The estimate crossed the threshold (or a compaction was asked for): the decision."""

        decision: Decision

    def hit_threshold(self, decision: Decision) -> None:
        self._hit_threshold(decision=decision)

    @event(CompactionThresholdHit)
    def _hit_threshold(self, decision: Decision) -> None:
        pass

    class CompactionFailed(Aggregate.Event):
        """The summarizer failed; the compaction falls back and says so."""

        summarizer: str
        error: str
        fallback: str

    def fail_compaction(self, summarizer: str, error: str, fallback: str) -> None:
        self._fail_compaction(summarizer=summarizer, error=error, fallback=fallback)

    @event(CompactionFailed)
    def _fail_compaction(self, summarizer: str, error: str, fallback: str) -> None:
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
        strategy: str
        summarizer: str
        summarizer_input_tokens: int
        summarizer_output_tokens: int

    def complete_compaction(
        self,
        decision: Decision,
        *,
        text: str,
        tokens: int,
        model: str,
        strategy: str,
        summarizer: str,
        summarizer_input_tokens: int = 0,
        summarizer_output_tokens: int = 0,
    ) -> CompactionOutcome:
        """Replaces the messages before `decision.retained_from` by a summary chunk."""
        if not self.entries or decision.retained_from <= self.retained_from:
            raise InvalidMessageError("this compaction would summarize nothing")
        if not text.strip():
            raise InvalidMessageError("a summary cannot be empty")
        replaced = len(self.summaries) if decision.resummarize else 0
        first = self.summaries[0].first_position if replaced else self.retained_from
        generation = self.generation + 1
        chunk = SummaryChunk(
            text=text,
            first_position=first,
            last_position=decision.retained_from - 1,
            tokens=tokens,
            model=model,
            generation=generation,
        )
        before = self.estimate()
        summarized = sum(1 for e in self.entries if e.position < decision.retained_from)
        kept = [e for e in self.entries if e.position >= decision.retained_from]
        summaries = [*self.summaries[replaced:], chunk]
        kept_tokens = sum(e.shown_tokens for e in kept)
        after = self.calibrated(self._raw_estimate(summaries, kept, kept_tokens))
        self._complete_compaction(
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

    @event(CompactionCompleted)
    def _complete_compaction(
        self,
        generation: int,
        summary: SummaryChunk,
        replaced_chunks: int,
        retained_from: int,
        messages_summarized: int,
        tokens_before: int,
        tokens_after: int,
        strategy: str,
        summarizer: str,
        summarizer_input_tokens: int,
        summarizer_output_tokens: int,
    ) -> None:
        self.generation = generation
        self.summaries = [*self.summaries[replaced_chunks:], summary]
        self.entries = [e for e in self.entries if e.position >= retained_from]
        self.tail_tokens = sum(e.shown_tokens for e in self.entries)
        self.last_compaction_at = self.message_count
        made_progress = tokens_before - tokens_after >= self.limits.min_reduction
        self.stalled_estimate = None if made_progress else tokens_after
        self.compaction_requested = None
        self.suppressed = None

    # Pruning and reasoning.

    def plan_pruning(self, extra_tokens: int = 0) -> PrunePlan | None:
        """Where the prune boundary should move now, or `None` (pure)."""
        past = self.calibrated(self.raw_estimate() + extra_tokens) >= self.limits.threshold
        return plan_pruning(self.entries, self.prune_boundary, self.limits, past_threshold=past)

    def plan_reasoning(self) -> tuple[DowngradedThinking, ...]:
        """Thinking blocks that should now be dropped or shown as text (pure)."""
        if not self.thinking_seen:
            return ()
        return plan_reasoning(self.entries, self.limits)

    class ToolsPruned(Aggregate.Event):
        """The prune boundary moved: older tool outputs are shown pruned from now on."""

        boundary: int
        strategy: str
        outputs: tuple[PrunedOutput, ...]
        tokens_before: int
        tokens_after: int
        reason: str

    def prune(self, plan: PrunePlan, outputs: tuple[PrunedOutput, ...]) -> None:
        """Moves the prune boundary forward; `outputs` carry the exact shown token counts."""
        if plan.boundary <= self.prune_boundary:
            raise ValueError("the prune boundary only moves forward")
        before = self.estimate()
        saved = sum(o.tokens_before - o.tokens_after for o in outputs)
        self._prune(
            boundary=plan.boundary,
            strategy=self.settings.prune_strategy,
            outputs=outputs,
            tokens_before=before,
            tokens_after=self.calibrated(self.raw_estimate() - saved),
            reason=plan.reason,
        )

    @event(ToolsPruned)
    def _prune(
        self,
        boundary: int,
        strategy: str,
        outputs: tuple[PrunedOutput, ...],
        tokens_before: int,
        tokens_after: int,
        reason: str,
    ) -> None:
        self.prune_boundary = boundary
        self._replace_blocks((o.position, o.block_index, o.text, o.tokens_after) for o in outputs)

    class ReasoningDowngraded(Aggregate.Event):
        """Older thinking blocks were dropped from requests or shown as plain text."""

        blocks: tuple[DowngradedThinking, ...]
        reason: str

    def downgrade_reasoning(self, blocks: tuple[DowngradedThinking, ...], reason: str) -> None:
        self._downgrade_reasoning(blocks=blocks, reason=reason)

    @event(ReasoningDowngraded)
    def _downgrade_reasoning(self, blocks: tuple[DowngradedThinking, ...], reason: str) -> None:
        self._replace_blocks((b.position, b.block_index, b.text, b.tokens_after) for b in blocks)

    def _replace_blocks(self, changes: Iterable[tuple[int, int, str | None, int]]) -> None:
        by_position = {e.position: k for k, e in enumerate(self.entries)}
        for position, block_index, text, tokens in changes:
            k = by_position[position]
            self.entries[k] = self.entries[k].replaced(block_index, text, tokens)
        self.tail_tokens = sum(e.shown_tokens for e in self.entries)

    # Guards, requests and warnings.

    class CompactionSuppressed(Aggregate.Event):
        """A compaction was due but did not run: a loop guard, or a hook cancelled it."""

        trigger: str
        reason: str
        estimate: int

    def suppress(self, trigger: str, reason: str, estimate: int) -> None:
        """Records a suppression once; the same reason again is not recorded twice."""
        if self.suppressed == reason:
            return
        self._suppress(trigger=trigger, reason=reason, estimate=estimate)

    @event(CompactionSuppressed)
    def _suppress(self, trigger: str, reason: str, estimate: int) -> None:
        self.suppressed = reason

    class CompactionRequested(Aggregate.Event):
        """Compaction was asked for mid-turn; it runs when the turn has ended."""

        reason: str

    def request_compaction(self, reason: str) -> None:
        self._request_compaction(reason=reason)

    @event(CompactionRequested)
    def _request_compaction(self, reason: str) -> None:
        self.compaction_requested = reason

    @property
    def turn_ended(self) -> bool:
        """Whether the last message starts a new turn (the previous turn has ended)."""
        return bool(self.entries) and self.entries[-1].message.is_user_prompt

    class OverflowReported(Aggregate.Event):
        """The provider rejected a request as too long: its count recalibrates the estimate."""

        provider_tokens: int | None
        maximum: int | None
        estimate: int

    def report_overflow(self, provider_tokens: int | None, maximum: int | None) -> None:
        self._report_overflow(
            provider_tokens=provider_tokens, maximum=maximum, estimate=self.raw_estimate()
        )

    @event(OverflowReported)
    def _report_overflow(
        self, provider_tokens: int | None, maximum: int | None, estimate: int
    ) -> None:
        if provider_tokens and estimate:
            low, high = CALIBRATION_BOUNDS
            observed = min(high, max(low, provider_tokens / estimate))
            self.calibration = max(self.calibration, round(observed, 6))
        if maximum and self.reserved_output < maximum < self.context_window:
            # The provider's window is what counts; a misconfigured one would overflow again.
            self.provider_window = maximum

    class DoubleCompactionConfigured(Aggregate.Event):
        """A warning: the provider's own context management is on as well as this session's."""

        provider: str
        detail: str

    def warn_double_compaction(self, provider: str, detail: str) -> None:
        self._warn_double_compaction(provider=provider, detail=detail)

    @event(DoubleCompactionConfigured)
    def _warn_double_compaction(self, provider: str, detail: str) -> None:
        pass


def _cut_points(entries: Sequence[Entry], *, thinking_led: bool = False) -> list[int]:
    """Indices where the retained tail may start: never between a tool call and its result.

    A tail may start at an assistant message (a summary message leads it) or at a user prompt.
    The last exchange always stays: the last user message, and the tool calls it answers.
    In a session with thinking, an active tool loop must keep an assistant message that
    starts with thinking first, so a cut inside it falls only before such a message.
    """
    if not entries:
        return []
    last = len(entries) - 1
    active_loop = bool(entries[last].message.tool_results)
    if active_loop:
        last -= 1
    loop_start = len(entries)
    if thinking_led and active_loop:
        prompts = [k for k, e in enumerate(entries) if e.message.is_user_prompt]
        loop_start = prompts[-1] + 1 if prompts else 0
    cuts = []
    for k in range(1, last + 1):
        message = entries[k].message
        if message.is_user_prompt or (
            message.role is Role.ASSISTANT
            and (
                k <= loop_start
                or isinstance(message.content[0], ThinkingBlock | RedactedThinkingBlock)
            )
        ):
            cuts.append(k)
    return cuts


def _turns_from(entries: Sequence[Entry], cut: int) -> int:
    return sum(1 for e in entries[cut:] if e.message.is_user_prompt)


def _suffix_sums(entries: Sequence[Entry]) -> list[int]:
    sums = [0] * (len(entries) + 1)
    for k in range(len(entries) - 1, -1, -1):
        sums[k] = sums[k + 1] + entries[k].shown_tokens
    return sums
