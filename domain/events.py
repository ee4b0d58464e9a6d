"""The events a session records: the audit trail's vocabulary, with the way each one changes
the state.

Each class here is listed on `abridged.domain.session.Session` under its own name
(`Session.MessageAppended is MessageAppended`), and stored under the topic
`abridged.domain.session:Session.<Name>` (`SessionEvent`). The command that records an event
is the `Session` method that names it; the event's `apply` is its whole change to the state
(through `SessionState`'s tail upkeep when messages move); an event with no `apply` records a
fact and changes nothing. Every class says, in its docstring, what it records;
`class_version` and the `upcast_v*` methods read events stored by earlier shapes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar
from uuid import UUID

from eventsourcing.domain import Aggregate

from abridged.domain.capabilities import capabilities_for
from abridged.domain.context import Entry, SummaryChunk
from abridged.domain.ledger import LedgerEntry, patched
from abridged.domain.messages import Message
from abridged.domain.planner import Decision
from abridged.domain.pruning import DowngradedThinking, PrunedOutput
from abridged.domain.reshowing import ReshownMessage
from abridged.domain.settings import CompactionSettings
from abridged.domain.truncation import Truncation
from abridged.domain.usage import Usage, moving_calibration, observed_ratio
from abridged.domain.vocabulary import CompactionStrategy, Fallback, SessionOrigin, Trigger

if TYPE_CHECKING:
    from abridged.domain.session import Session


STORED_AS = "abridged.domain.session:Session."
"""What each event's stored topic starts with: events are stored, and found in the store, as
the aggregate's own (`Session.MessageAppended`), wherever their classes are defined."""


class SessionEvent(Aggregate.Event):
    """An event of the `Session` aggregate: the base its events share (`Session.Event`)."""

    TOPIC: ClassVar[str]

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        # An explicit topic: the one every store already holds, which a class that moves or
        # is renamed must keep (`eventsourcing.utils.get_topic` reads `TOPIC` first).
        cls.TOPIC = STORED_AS + cls.__name__


class Started(SessionEvent, Aggregate.Created):
    """A session began, with its model, window, settings, system prompt and tools, and
    the host's metadata and tags (for listing and filtering sessions); a session
    continuing another names its parent, how it began, and the parent's summary it
    starts from."""

    class_version = 5

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

    @staticmethod
    def upcast_v3_v4(state: dict[str, Any]) -> None:
        """Sessions started before thinking could be bound to its prefix: the model's row of
        the built-in table says whether it is."""
        state["thinking_bound"] = capabilities_for(state["model"]).prefix_bound_thinking

    @staticmethod
    def upcast_v4_v5(state: dict[str, Any]) -> None:
        """Sessions started before the calibration started at the model's tokenizer ratio
        started at 1.0; they replay as they ran."""
        state["tokenizer_ratio"] = 1.0

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
    thinking_bound: bool
    """Whether the model binds each thinking block to the prefix it was produced under
    (`abridged.domain.capabilities`): requests then only append between compactions."""
    tokenizer_ratio: float
    """Where the calibration starts: how many tokens the model's tokenizer may take for one
    the session's counter counts (`ModelCapabilities.tokenizer_ratio`, or 1.0)."""

    def apply(self, session: Session) -> None:
        session.model = self.model
        session.thinking_bound = self.thinking_bound
        session.context_window = self.context_window
        session.reserved_output = self.reserved_output
        session.settings = self.settings
        session.system = self.system
        # Lists, not tuples: snapshots store state as JSON, which has no tuples.
        session.tools = list(self.tools)
        session.system_tokens = self.system_tokens
        session.tools_tokens = self.tools_tokens
        session.token_counter = self.token_counter
        session.metadata = dict(self.metadata)
        session.tags = list(self.tags)
        # A session continuing another from its summary starts with that summary in view.
        session.start_empty(self.parent_summary)
        session.tokenizer_ratio = session.calibration = self.tokenizer_ratio


class MessageAppended(SessionEvent):
    """A message joined the history, counted once; a model reply carries its usage."""

    class_version = 3

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """Messages stored before their saving was recorded: a replay computes it."""
        state["saving"] = None

    @staticmethod
    def upcast_v2_v3(state: dict[str, Any]) -> None:
        """Messages stored before the prefix revision was recorded."""
        state["prefix_revision"] = None

    message: Message
    tokens: int
    block_tokens: tuple[int, ...]
    truncations: tuple[Truncation, ...]
    usage: Usage | None
    request_estimate: int | None
    saving: int | None
    """The tokens a prune of the message's tool outputs would free (`indexes.saving_of`),
    under the settings it was appended with; recorded so that a replay need not scan the
    outputs for their salient lines again (`None`: computed on replay)."""
    prefix_revision: int | None
    """For a model reply, the session's `prefix_revision` when it was recorded: the view
    before it (system, tools, summaries, ledger, every earlier message as shown) is named
    exactly by this revision and the reply's position, so a thinking block in it is valid
    while the revision has not moved (`None`: not a reply, or stored before it was recorded)."""
    model: str | None = None
    """For a model reply, the model that wrote it (the reply's own `model`, else the session's
    when it was recorded): which models may read its thinking (`None`: not a reply, or stored
    before it was recorded)."""
    calibrates: bool = True
    """Whether `usage` moves the calibration: not for a reply the API compacted first (its
    `input_tokens` count the context after the compaction, not what was sent). Events stored
    before it load with `True`, and replay as they ran."""

    def apply(self, session: Session) -> None:
        entry = Entry(
            session.message_count,
            self.message,
            self.tokens,
            tuple(self.block_tokens),
            tuple(self.truncations),
            revision=self.prefix_revision,
        )
        session.add_entry(entry, self.originator_version, self.saving)
        if self.model is not None:
            session.note_producer(entry, self.model)
        if self.usage is not None and self.request_estimate and self.calibrates:
            session.calibration = moving_calibration(
                session.calibration, self.usage.prompt_tokens, self.request_estimate
            )


class CompactionThresholdHit(SessionEvent):
    """The estimate crossed the threshold (or a compaction was asked for): the decision."""

    decision: Decision


class CompactionFailed(SessionEvent):
    """The summarizer failed; the compaction falls back and says so."""

    summarizer: str
    error: str
    fallback: Fallback


class CompactionCompleted(SessionEvent):
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
    summarizer_iterations: tuple[str, ...] = ()
    """The API's `usage.iterations` (JSON text each) when the API compacted (its own
    compaction, billed as an iteration of its own); empty otherwise and in events stored
    before it existed."""
    superseded_system: tuple[int, ...] | None = None
    """The positions of the system prompts given mid-conversation that this compaction
    stops showing, a later one replacing them (`abridged.domain.instructions`); `None` in
    events stored before a compaction did so (it carried every one)."""

    def apply(self, session: Session) -> None:
        session.generation = self.generation
        session.summaries = [*session.summaries[self.replaced_chunks :], self.summary]
        session.drop_before(self.retained_from)
        if self.superseded_system:
            session.drop_carried(self.superseded_system)
        session.prefix_revision += 1
        if self.summary.chained_revision is not None:
            # The API's block was written over the exact prefix the kept replies were
            # produced under: their thinking stays valid under the new prefix.
            session.carry_revision(self.summary.chained_revision)
        session.last_compaction_at = session.message_count
        made_progress = self.tokens_before - self.tokens_after >= session.limits.min_reduction
        session.stalled_estimate = None if made_progress else self.tokens_after
        session.compacted_to = self.tokens_after
        session.compaction_requested = None
        session.suppressed = None


class ApiCompacted(SessionEvent):
    """The API compacted the conversation itself (threshold compaction, `compact_20260112`):
    the model reply at `position` starts with its `compaction` block and the API drops
    everything sent before it, so the view starts at that reply. `summary` stands for the
    messages before it (its text is the block's content; the reply's block is sent, not it,
    until a compaction summarizes the reply: then it reads as text, counted so when adopted);
    earlier chunks are folded into it."""

    position: int
    generation: int
    summary: SummaryChunk
    tokens_before: int
    tokens_after: int

    def apply(self, session: Session) -> None:
        session.generation = self.generation
        session.summaries = [self.summary]
        session.drop_before(self.position)
        session.last_compaction_at = session.message_count
        session.stalled_estimate = None
        session.compacted_to = self.tokens_after
        session.compaction_requested = None
        session.suppressed = None


class LedgerUpdated(SessionEvent):
    """The facts ledger changed at a compaction (or, alone, to fit a request no cut can
    shorten: `abridged.domain.cuts.ledger_fit`): the entries new or changed since the last
    update (`changed`; with `whole`, every entry it holds), how many it holds now, the
    segment appended after the earlier ones (or, `consolidated`, the one segment that
    replaces them), the tokens of all its segments, and every entry it dropped to stay
    within its budget (only a consolidation drops)."""

    class_version = 3

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """Before segments, each update's text was the whole ledger."""
        state["consolidated"] = True

    @staticmethod
    def upcast_v2_v3(state: dict[str, Any]) -> None:
        """Each update recorded every entry the ledger held (tens of kilobytes for a long
        session's, decoded by every replay); it now records what changed."""
        entries = state.pop("entries")
        state["changed"] = entries
        state["whole"] = True
        state["count"] = len(entries)

    changed: tuple[LedgerEntry, ...]
    whole: bool
    count: int
    text: str
    tokens: int
    dropped: tuple[LedgerEntry, ...]
    consolidated: bool

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """Every entry the ledger holds after this update: what it recorded when `whole`,
        else what the updates before it leave, patched (known once the session's events are
        read together: `Sessions.history`, `held_ledgers`)."""
        held: tuple[LedgerEntry, ...] | None = self.__dict__.get("_held")
        if held is not None:
            return held
        if self.whole:
            return tuple(self.changed)
        raise LookupError(
            "this ledger update records what changed: read it with the session's earlier "
            "events (held_ledgers) to know every entry"
        )

    def after(self, held: Sequence[LedgerEntry]) -> list[LedgerEntry]:
        """The ledger this update leaves, given the one before it."""
        if self.whole:
            return list(self.changed)
        return patched(held, self.changed, self.dropped)

    def apply(self, session: Session) -> None:
        session.prefix_revision += 1
        session.ledger = self.after(session.ledger)
        if self.consolidated:
            session.ledger_segments = [self.text] if self.text else []
        elif self.text:
            session.ledger_segments = [*session.ledger_segments, self.text]
        session.ledger_tokens = self.tokens


def held_ledgers(events: Iterable[object]) -> None:
    """Tells each `LedgerUpdated` among a session's events (all of them, oldest first) the
    whole ledger it leaves (its `entries`), by patching the ledger of the updates before it."""
    held: list[LedgerEntry] = []
    for event in events:
        if isinstance(event, LedgerUpdated):
            held = event.after(held)
            event.__dict__["_held"] = tuple(held)


class ToolsPruned(SessionEvent):
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


class ReasoningDowngraded(SessionEvent):
    """Older thinking blocks were dropped from requests or shown as plain text."""

    blocks: tuple[DowngradedThinking, ...]
    reason: str

    def apply(self, session: Session) -> None:
        session.replace_blocks(
            (b.position, b.block_index, b.text, b.tokens_after) for b in self.blocks
        )


class CompactionDiscarded(SessionEvent):
    """A summary written off the user's turn was not applied: what it covered changed
    while it was written (another compaction won, or the session was reconfigured)."""

    generation: int
    retained_from: int
    reason: str


class CompactionSuppressed(SessionEvent):
    """A compaction was due but did not run: a loop guard, or a hook cancelled it."""

    trigger: Trigger
    reason: str
    estimate: int

    def apply(self, session: Session) -> None:
        session.suppressed = self.reason


class CompactionRequested(SessionEvent):
    """Compaction was asked for mid-turn; it runs when the turn has ended."""

    reason: str

    def apply(self, session: Session) -> None:
        session.compaction_requested = self.reason


class MessagesReshown(SessionEvent):
    """A message's room shrank (a smaller window the provider enforces or a reconfigure set,
    or more of it taken by the system prompt, tools or system messages): retained messages
    shown larger than one message may now be shown are reduced again, to `cap`."""

    messages: tuple[ReshownMessage, ...]
    cap: int
    reason: str

    def apply(self, session: Session) -> None:
        session.reshow_entries(self.messages)


class OverflowReported(SessionEvent):
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


class DoubleCompactionConfigured(SessionEvent):
    """A warning: the provider's own context management is on as well as this session's."""

    provider: str
    detail: str


class Deleted(SessionEvent):
    """The host deleted the session: it takes no more commands and is no longer listed.
    Its earlier events stay in the store (see docs/embedding.md, "Deleting")."""

    reason: str

    def apply(self, session: Session) -> None:
        session.deleted = self.reason
