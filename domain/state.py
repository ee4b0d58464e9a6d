"""What a `Session` holds, and the indexes its events keep over the retained tail.

`SessionState` is the aggregate's state without its commands and events: the attributes (and
the upcasters of snapshots taken before some of them existed), the queries the planners and
the service read (`estimate`, `limits`, `awaiting_reply`, ...), and the index maintenance the
events' `apply` methods call when a message joins the tail (`add_entry`), when blocks are
shown otherwise (`replace_blocks`) and when a compaction leaves older messages out
(`drop_before`). Each keeps the indexes of `abridged.domain.indexes` in time proportional to
what changed; `recompute` in that module is their definition from scratch.

`abridged.domain.session.Session` inherits it; nothing here records an event.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, MutableSequence, Sequence
from typing import Any

import attrs

from abridged.domain import state_upcasts as upcasts
from abridged.domain.context import Entry, SummaryChunk, calibrated, raw_estimate
from abridged.domain.indexes import (
    TailIndexes,
    has_thinking,
    rebuilt_sums,
    recompute,
    replaced_count,
    saving_of,
    thinking_tokens,
)
from abridged.domain.instructions import superseded_instructions
from abridged.domain.ledger import LedgerEntry
from abridged.domain.messages import Message, RedactedThinkingBlock, Role, ThinkingBlock
from abridged.domain.pruning import output_tokens, prunable_tokens
from abridged.domain.replies import shown_reply
from abridged.domain.reshowing import ReshownMessage
from abridged.domain.settings import CompactionSettings, Limits
from abridged.domain.tail import DeferredTail, TailSource, entry_itself, shown_message_of
from abridged.domain.validation import check_blocks, check_next, check_tools_defined


class SessionState(TailIndexes):
    """A session's state: the attributes the `Started` mutator sets and later events change."""

    class_version = 8
    """2: the state holds the incremental indexes of `abridged.domain.indexes`;
    3: and the host's metadata, tags and deletion mark;
    4: and the facts ledger (`ledger`, `ledger_text`, `ledger_tokens`) and `compacted_to`,
    the estimate the last compaction left;
    5: the ledger's text as segments (`ledger_segments`) instead of one `ledger_text`;
    6: whether the model binds thinking to its prefix, and the prefix's revision;
    7: the calibration's starting ratio for the model's tokenizer (`tokenizer_ratio`);
    8: the count of retained blocks shown otherwise (`replaced_blocks`)."""

    model: str
    context_window: int
    reserved_output: int
    settings: CompactionSettings
    system: str
    tools: list[dict[str, Any]]
    system_tokens: int
    tools_tokens: int
    token_counter: str
    entries: MutableSequence[Entry]
    """A list, or after a load from a snapshot a `DeferredTail` whose older messages are
    read when first needed (`defer_tail`)."""
    summaries: list[SummaryChunk]
    message_count: int
    generation: int
    tail_tokens: int
    calibration: float
    tokenizer_ratio: float
    prune_boundary: int
    thinking_seen: bool
    thinking_bound: bool
    """Whether the model binds each thinking block to the prefix it was produced under
    (preserved thinking): the planners then change earlier content only at a compaction,
    and every thinking block produced before such a change leaves the view with it."""
    replaced_blocks: int | None
    """How many blocks of the retained tail are shown otherwise than stored (pruned,
    truncated to text, dropped), kept by the mutators; None after a load from a snapshot
    taken before it was kept, until `shown_otherwise` counts it."""
    prefix_revision: int
    """Counts the changes to what requests show before their last message (a compaction, a
    prune, a downgrade, a ledger update, a new system prompt or tools): a reply recorded at
    revision r was produced under the prefix that revision names."""
    last_compaction_at: int
    """`message_count` when the last compaction completed."""
    stalled_estimate: int | None
    """The estimate a compaction could not reduce enough; guards against loops."""
    compacted_to: int | None
    """The estimate the last compaction left (`tokens_after`); the next threshold
    compaction waits until the context has grown by `min_growth_share` since."""
    compaction_requested: str | None
    suppressed: str | None
    provider_window: int | None
    """The window the provider enforced when it was smaller than `context_window`."""
    # And the indexes over the retained tail (`TailIndexes`), kept by the mutators.
    entry_versions: list[int]
    """The version of the `MessageAppended` of each retained message (0: unknown), so a
    snapshot can point at the events that hold the messages instead of copying them."""
    metadata: dict[str, str]
    tags: list[str]
    deleted: str | None
    """Why the session was deleted; a deleted session takes no more commands."""
    ledger: list[LedgerEntry]
    ledger_segments: list[str]
    """The ledger as requests show it: one text block per segment, oldest first
    (`abridged.domain.ledger.advance`)."""
    ledger_tokens: int
    """Tokens of all the ledger's segments, as shown."""
    queued_system: tuple[Message, ...] = ()
    """System messages waiting for the next user message (the API takes one only after a
    user turn): a reconfiguration made while the turn had ended."""
    instructed_tools: tuple[dict[str, Any], ...] | None = None
    """The tool set in effect after the last tool change given as a system message
    (`ToolsInstructed`); `None` when the top-level `tools` are in effect."""
    instructed_system: str | None = None
    """The system prompt last given as a system message (`SystemPromptInstructed`)."""
    carried_system: tuple[Entry, ...] = ()
    """The `role: "system"` messages of the ranges compactions summarized (never summarized
    away), shown right after the summaries; a class default (older states load with none)."""
    thinking_producers: Sequence[Sequence[Any]] = ()
    """The model that wrote each retained reply with thinking, `[position, model]` lists, as
    `MessageAppended.model` recorded it (older replies are not listed); a class default (older
    states load with none), replaced whole, never changed in place."""
    turn_context: Sequence[Sequence[Any]] = ()
    """Per-turn content shown to a model binding thinking (`TurnContextShown`): `[position of
    the prompt it follows, text, tokens]` lists, oldest first, while retained; class defaults."""
    turn_context_tokens: int = 0
    counted_system_tokens: int | None = None  # None in states saved before it was kept
    first_thinking_at: int | None = None
    """The position of the first message with thinking; `None` before one, and in states
    saved before it was kept (`thinking_seen` then says whether there was one)."""

    @property
    def system_message_tokens(self) -> int:
        """Tokens of the `role: "system"` messages, all in view (tail or carried)."""
        if self.counted_system_tokens is None:
            shown = (e.shown_tokens for e in self.entries if e.message.is_system)
            self.counted_system_tokens = sum(shown, self.carried_tokens)
        return self.counted_system_tokens

    def producer_of(self, position: int) -> str | None:
        """The model that wrote the retained reply at `position`, if it was recorded."""
        return next((str(p[1]) for p in self.thinking_producers if p[0] == position), None)

    def note_producer(self, entry: Entry, model: str) -> None:
        """Records which model wrote `entry`, a reply just added, when it holds thinking."""
        if has_thinking(entry):
            self.thinking_producers = [*self.thinking_producers, [entry.position, model]]

    def start_empty(self, summary: SummaryChunk | None) -> None:
        """Sets the state of a session with no messages yet (and perhaps a parent's summary)."""
        self.entries = []
        self.summaries = [summary] if summary else []
        self.message_count = self.generation = self.tail_tokens = self.prune_boundary = 0
        self.replaced_blocks = 0
        self.calibration = 1.0
        self.thinking_seen = False
        self.prefix_revision = 0
        self.last_compaction_at = -1
        self.stalled_estimate = self.compacted_to = self.provider_window = None
        self.compaction_requested = self.suppressed = self.deleted = None
        self.__dict__.update(recompute([], self.settings).index_state())
        self.entry_versions = []
        self.ledger = []
        self.ledger_segments = []
        self.ledger_tokens = 0

    upcast_v1_v2 = staticmethod(upcasts.v1_v2)
    upcast_v2_v3 = staticmethod(upcasts.v2_v3)
    upcast_v3_v4 = staticmethod(upcasts.v3_v4)
    upcast_v4_v5 = staticmethod(upcasts.v4_v5)
    upcast_v5_v6 = staticmethod(upcasts.v5_v6)
    upcast_v6_v7 = staticmethod(upcasts.v6_v7)
    upcast_v7_v8 = staticmethod(upcasts.v7_v8)

    def shown_otherwise(self) -> int:
        """How many blocks of the retained tail are shown otherwise than stored (pruned,
        truncated to text, dropped): `replaced_blocks`, counted once from the tail when a
        snapshot taken before it was kept left it unknown."""
        if self.replaced_blocks is None:
            self.replaced_blocks = replaced_count(self.entries)
        return self.replaced_blocks

    def defer_tail(self, source: TailSource) -> None:
        """The retained tail's messages (and the shown messages made of them) are read from
        `source` when something first needs them (`abridged.domain.tail`); `source` holds
        the entries `entries` holds now, less their bodies."""
        owner = self.__dict__
        self.entries = DeferredTail(source, entry_itself, owner, "entries")
        self.shown_messages = DeferredTail(source, shown_message_of, owner, "shown_messages")

    def __deepcopy__(self, memo: dict[int, Any]) -> SessionState:
        # The service copies a cached session before each command. Every value the session
        # holds is immutable or replaced whole, never changed in place, so fresh containers
        # are enough: sharing the values keeps the copy cheap whatever the history's length.
        # A tail not read yet stays so in the copy, sharing what reads it.
        copy = object.__new__(type(self))
        owner = copy.__dict__
        owner.update(
            {
                name: (
                    value.rebound(owner)
                    if isinstance(value, DeferredTail)
                    else type(value)(value)
                    if isinstance(value, list | dict)
                    else value
                )
                for name, value in self.__dict__.items()
            }
        )
        return copy

    # What commands and the planners read (decisions: `abridged.domain.planner`).

    @property
    def ledger_text(self) -> str:
        """The ledger's segments as one text (what a request shows, without the blocks)."""
        return "\n\n".join(self.ledger_segments)

    @property
    def limits(self) -> Limits:
        window = self.context_window
        if self.provider_window is not None:
            window = min(window, self.provider_window)
        return Limits(window, self.reserved_output, self.settings)

    @property
    def retained_from(self) -> int:
        # Positions are contiguous up to the last message's: no body is read.
        return self.message_count - len(self.entries)

    @property
    def awaiting_reply(self) -> bool:
        """Whether the last message is the user's, so a request can be built."""
        return bool(self.entries) and self.entries[-1].message.role is not Role.ASSISTANT

    @property
    def turn_ended(self) -> bool:
        """Whether the last message starts a new turn (the previous turn has ended); system
        messages after a user prompt belong to its turn."""
        for entry in reversed(self.entries):
            if not entry.message.is_system:
                return entry.message.is_user_prompt
        return False

    @property
    def carried_tokens(self) -> int:
        """Tokens of the system messages compactions carried (`carried_system`)."""
        return sum(e.shown_tokens for e in self.carried_system)

    def raw_estimate(self) -> int:
        """The uncalibrated estimate of the next request: a sum of stored counts."""
        return raw_estimate(self)

    def calibrated(self, raw: int) -> int:
        return calibrated(self, raw)

    def estimate(self) -> int:
        """The estimate of the next request, calibrated by the provider's reported usage."""
        return calibrated(self, raw_estimate(self))

    def estimate_after(
        self, retained_from: int, summaries: list[SummaryChunk]
    ) -> tuple[int, tuple[int, ...]]:
        """The estimate once the messages before `retained_from` give way to `summaries` (the
        new chunk last), and the carried system prompts it stops showing (`superseded_at`)."""
        superseded = self.superseded_at(retained_from, summaries[-1])
        drop = max(0, min(retained_from - self.retained_from, len(self.entries)))
        kept, dropped = self.entries[drop:], self.entries[:drop]
        kept_tokens = self.tail_tokens - sum(e.shown_tokens for e in dropped)
        # System messages of the summarized range stay in view (carried), but for the
        # system prompts a later one replaces.
        carried = (*self.carried_system, *(e for e in dropped if e.message.is_system))
        kept_tokens += sum(e.shown_tokens for e in carried if e.position not in superseded)
        kept_tokens -= self.carried_tokens
        return calibrated(self, raw_estimate(self, summaries, kept, kept_tokens)), superseded

    def superseded_at(self, retained_from: int, chunk: SummaryChunk) -> tuple[int, ...]:
        """The carried system prompts a compaction to `chunk` keeping the messages from
        `retained_from` on stops showing (`domain.instructions`; none for the API's block)."""
        if chunk.chained_revision is not None or chunk.block is not None:
            return ()
        drop = max(0, min(retained_from - self.retained_from, len(self.entries)))
        dropped = (e for e in self.entries[:drop] if e.message.is_system)
        return superseded_instructions((*self.carried_system, *dropped))

    def drop_carried(self, positions: Sequence[int]) -> None:
        """Stops showing the carried system messages at `positions`."""
        gone = [e for e in self.carried_system if e.position in positions]
        self.carried_system = tuple(e for e in self.carried_system if e.position not in positions)
        if self.counted_system_tokens is not None:
            self.counted_system_tokens -= sum(e.shown_tokens for e in gone)

    def check_append(self, message: Message, *, reply: bool = False) -> None:
        """Raises the `InvalidMessageError` that appending `message` would cause.

        A model `reply` is checked as requests will show it (`abridged.domain.replies`): one
        cut short or empty is recorded all the same, since the provider returned it."""
        check_blocks(shown_reply(message) if reply else message)
        at = len(self.entries)
        check_next(lambda k: self.entries[k].message, at, message, lambda: self.tool_ids)
        # Tools given inline (`ToolsInstructed`, on models that take them) define tools too.
        check_tools_defined(bool(self.tools or self.instructed_tools), (message,))

    # Index maintenance, called by the mutators.

    def saving_of_next(self, entry: Entry) -> int:
        """What a prune of `entry`'s outputs would free, were it appended next."""
        previous = self.entries[-1].message if self.entries else None
        return prunable_tokens(entry, previous, self.settings)

    def add_entry(self, entry: Entry, version: int, saving: int | None = None) -> None:
        """Appends `entry` (held by the event at `version`) to the tail and its indexes;
        `saving` is `saving_of_next(entry)` when known."""
        if saving is None:
            saving = self.saving_of_next(entry)
        # Kept on every append, live or replayed alike (the two states hold the same keys).
        counted = self.system_message_tokens
        self.counted_system_tokens = counted + (
            entry.shown_tokens if entry.message.is_system else 0
        )
        self.entries.append(entry)
        self.entry_versions.append(version)
        self.message_count += 1
        self.tail_tokens += entry.shown_tokens
        if self.replaced_blocks is not None:
            self.replaced_blocks += len(entry.replacements)
        message = entry.message
        uses = message.tool_uses
        for use in uses:
            self.tool_ids[use.id] = entry.position
        self.open_tool_ids = [u.id for u in uses]
        if message.is_user_prompt:
            self.prompt_positions.append(entry.position)
        if has_thinking(entry):
            self.thinking_positions.append(entry.position)
        self.output_sums.append(self.output_sums[-1] + output_tokens(entry))
        self.saving_sums.append(self.saving_sums[-1] + saving)
        self.thinking_sums.append(self.thinking_sums[-1] + thinking_tokens(entry))
        self.shown_messages.append(entry.shown_message)
        if any(isinstance(b, ThinkingBlock | RedactedThinkingBlock) for b in message.content):
            if not self.thinking_seen:
                self.first_thinking_at = entry.position
            self.thinking_seen = True

    def replace_blocks(self, changes: Iterable[tuple[int, int, str | None, int]]) -> None:
        """Shows blocks otherwise: (position, block index, text or None to drop, tokens)."""
        first = self.retained_from
        changed: set[int] = set()
        for position, block_index, text, tokens in changes:
            k = position - first
            before = self.entries[k]
            self.entries[k] = before.replaced(block_index, text, tokens)
            self.tail_tokens += self.entries[k].shown_tokens - before.shown_tokens
            if self.replaced_blocks is not None:
                self.replaced_blocks += len(self.entries[k].replacements) - len(before.replacements)
            self.shown_messages[k] = self.entries[k].shown_message
            changed.add(k)
        self._entries_changed(changed)

    def reshow_entries(self, messages: Iterable[ReshownMessage]) -> None:
        """Shows retained messages with other truncations (reduced for a smaller window)."""
        first = self.retained_from
        changed: set[int] = set()
        for reshown in messages:
            k = reshown.position - first
            if not 0 <= k < len(self.entries):
                continue
            before = self.entries[k]
            self.entries[k] = attrs.evolve(
                before, truncations=reshown.truncations, block_tokens=reshown.block_tokens
            )
            self.tail_tokens += self.entries[k].shown_tokens - before.shown_tokens
            self.shown_messages[k] = self.entries[k].shown_message
            changed.add(k)
        self._entries_changed(changed)

    def _entries_changed(self, changed: set[int]) -> None:
        """Rebuilds the indexes after the entries at `changed` are shown otherwise."""
        if not changed:
            return
        self.prefix_revision += 1
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

    def carry_revision(self, revision: int) -> None:
        """The retained replies with thinking valid under `revision` become valid under the
        current one (only their thinking is bound to a prefix)."""
        if not self.entries:
            return
        first = self.entries[0].position
        for position in self.thinking_positions:
            k = position - first
            if self.entries[k].revision == revision:
                self.entries[k] = attrs.evolve(self.entries[k], revision=self.prefix_revision)

    def drop_before(self, position: int) -> None:
        """Leaves the messages before `position` out of the retained tail (and the indexes)."""
        drop = max(0, min(position - self.retained_from, len(self.entries)))
        dropped, self.entries = self.entries[:drop], self.entries[drop:]
        carried = tuple(e for e in dropped if e.message.is_system)
        if carried:
            self.carried_system = (*self.carried_system, *carried)
        del self.entry_versions[:drop]
        self.tail_tokens -= sum(e.shown_tokens for e in dropped)
        if self.replaced_blocks is not None:
            self.replaced_blocks -= replaced_count(dropped)
        for entry in dropped:
            for use in entry.message.tool_uses:
                self.tool_ids.pop(use.id, None)
        if not self.entries:
            self.open_tool_ids = []
        del self.prompt_positions[: bisect_left(self.prompt_positions, position)]
        del self.thinking_positions[: bisect_left(self.thinking_positions, position)]
        if self.thinking_producers:
            self.thinking_producers = [p for p in self.thinking_producers if p[0] >= position]
        if self.turn_context:
            self.turn_context = [c for c in self.turn_context if c[0] >= position]
            self.turn_context_tokens = sum(c[2] for c in self.turn_context)
        base = self.output_sums[drop]
        self.output_sums = [s - base for s in self.output_sums[drop:]]
        base = self.thinking_sums[drop]
        self.thinking_sums = [s - base for s in self.thinking_sums[drop:]]
        del self.shown_messages[:drop]
        # The new first message's calls are out of view: it counts no saving.
        first = self.saving_sums[drop + 1] if self.entries else self.saving_sums[drop]
        self.saving_sums = [0, *(s - first for s in self.saving_sums[drop + 1 :])]
