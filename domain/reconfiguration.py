"""Reconfiguring a session mid-conversation: its commands, their events and what each event
changes, together.

The system prompt, the tools, the model and the settings a session's next request is made
with may change (`Reconfiguring.reconfigure`: an event for each that differs, each changing
the top of the prompt). For a model that takes `role: "system"` messages, a new system prompt
or tool set may instead be given as a system message after a user turn
(`instruct_system_prompt`, `instruct_tools`), which leaves the cached prefix and every thinking
block valid; one made while the turn has ended waits for the next user message.

`abridged.domain.session.Session` inherits these commands, and lists these events under its
own name like all the others (`Session.ToolsChanged`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.domain import CanMutateAggregate

from abridged.domain.capabilities import capabilities_for
from abridged.domain.degradation import check_room, exchange_need, salient_of
from abridged.domain.events import SessionEvent
from abridged.domain.indexes import recompute
from abridged.domain.inputs import tool_key
from abridged.domain.instructions import instruction_message
from abridged.domain.messages import Message, Role, WireBlock
from abridged.domain.settings import CompactionSettings, Limits
from abridged.domain.state import SessionState
from abridged.domain.tokens import REQUEST_OVERHEAD, CountText
from abridged.domain.usage import within_bounds
from abridged.domain.validation import check_reconfiguration


def tool_change_message(
    before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]
) -> Message | None:
    """The system message that takes the tool set `before` to `after` by additions and
    removals; `None` when a tool keeps its name but changes its definition (a change the
    blocks cannot say, nor can they add or withdraw an MCP toolset, which has no name) or
    when nothing changes."""
    old = {tool_key(t): t for t in before}
    new = {tool_key(t): t for t in after}
    if any(old[name] != new[name] for name in old.keys() & new.keys()):
        return None
    if any(
        t.get("type") == "mcp_toolset"
        for k, t in (old | new).items()
        if k not in old.keys() & new.keys()
    ):
        return None
    blocks = [
        WireBlock.of({"type": "tool_removal", "tool": {"type": "tool_reference", "name": name}})
        for name in old
        if name not in new
    ] + [
        WireBlock.of(
            {"type": "tool_addition", "tool": {"type": "tool_definition", "definition": tool}}
        )
        for name, tool in new.items()
        if name not in old
    ]
    return Message(Role.SYSTEM, tuple(blocks)) if blocks else None


class Reconfiguring(SessionState):
    """The commands that change what a session's requests are made with, and their events."""

    if TYPE_CHECKING:  # eventsourcing's `Aggregate` provides it, in `Session`

        def trigger_event(
            self, event_class: type[CanMutateAggregate[UUID]], **kwargs: Any
        ) -> None: ...

    class SystemPromptChanged(SessionEvent):
        """The system prompt changed; the next request sends the new one."""

        system: str
        system_tokens: int

        def apply(self, session: SessionState) -> None:
            session.system = self.system
            session.system_tokens = self.system_tokens
            session.prefix_revision += 1

    class SystemPromptInstructed(SessionEvent):
        """The system prompt changed for a model that takes `role: "system"` messages: instead of
        rewriting the top of the prompt (which would invalidate the cache and every thinking
        block), the new prompt goes as a system message after a user turn. `queued`: the turn had
        ended, so the message waits for the next user message (`queued_system`)."""

        system: str
        queued: bool

        def apply(self, session: SessionState) -> None:
            session.instructed_system = self.system
            if self.queued:
                session.queued_system = (*session.queued_system, instruction_message(self.system))

    class ToolsInstructed(SessionEvent):
        """The tools changed for a model that takes tool changes mid-conversation: instead of
        rewriting the top-level `tools`, a system message adds (`tool_addition`, defined inline)
        and withdraws (`tool_removal`) tools from that point on. `tools` is the tool set in effect
        after it; `queued` as for `SystemPromptInstructed`."""

        tools: tuple[dict[str, Any], ...]
        queued: bool
        message: Message

        def apply(self, session: SessionState) -> None:
            session.instructed_tools = tuple(self.tools)
            if self.queued:
                session.queued_system = (*session.queued_system, self.message)

    class QueuedSystemMessagesAppended(SessionEvent):
        """The queued system messages were appended after the user message that followed them."""

        count: int

        def apply(self, session: SessionState) -> None:
            session.queued_system = session.queued_system[self.count :]

    class ToolsChanged(SessionEvent):
        """The tool definitions changed; the next request sends the new ones."""

        tools: tuple[dict[str, Any], ...]
        tools_tokens: int

        def apply(self, session: SessionState) -> None:
            session.tools = list(self.tools)
            session.tools_tokens = self.tools_tokens
            session.prefix_revision += 1

    class ModelChanged(SessionEvent):
        """The conversation moved to another model, with its window and output reservation, and
        whether that model binds thinking blocks to their prefix."""

        class_version = 3

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Changes stored before thinking could be bound: the table's row for the model."""
            state["thinking_bound"] = capabilities_for(state["model"]).prefix_bound_thinking

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            """Changes stored before the calibration followed the tokenizer left it as it was."""
            state["tokenizer_ratio"] = None

        model: str
        context_window: int
        reserved_output: int
        thinking_bound: bool
        tokenizer_ratio: float | None
        """The new model's (`ModelCapabilities.tokenizer_ratio`, or 1.0): the calibration,
        learnt against the old model's tokenizer, is scaled by the new ratio over the old."""

        def apply(self, session: SessionState) -> None:
            if self.tokenizer_ratio is not None:
                scaled = session.calibration * self.tokenizer_ratio / session.tokenizer_ratio
                session.calibration = round(within_bounds(scaled), 6)
                session.tokenizer_ratio = self.tokenizer_ratio
            session.thinking_bound = self.thinking_bound
            if self.model != session.model:
                # A window the old model's provider enforced says nothing about the new model;
                # the same model asked for another reservation still has it.
                session.provider_window = None
            session.model = self.model
            session.context_window = self.context_window
            session.reserved_output = self.reserved_output

    class SettingsChanged(SessionEvent):
        """The compaction settings changed; later decisions use the new ones."""

        settings: CompactionSettings
        settings_fingerprint: str

        def apply(self, session: SessionState) -> None:
            session.settings = self.settings
            # The loop guards judged the old limits; the new ones start afresh.
            session.stalled_estimate = None
            session.suppressed = None
            # What pruning could save depends on the settings (tool policies): a rare event,
            # so the indexes are derived again from the retained tail.
            session.__dict__.update(recompute(session.entries, self.settings).index_state())

    def reconfigure(
        self,
        *,
        system: tuple[str, int] | None = None,
        tools: tuple[Sequence[dict[str, Any]], int] | None = None,
        model: tuple[str, int, int] | None = None,
        settings: CompactionSettings | None = None,
        thinking_bound: bool | None = None,
        tokenizer_ratio: float | None = None,
    ) -> None:
        """Changes the system prompt (text, tokens), tools (definitions, tokens), model
        (name, window, reserved output; `thinking_bound` and `tokenizer_ratio` as the new
        model's capabilities say, by default its row of the built-in table) or settings; one
        event for each that differs.

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
            row = capabilities_for(name)
            if thinking_bound is None:
                thinking_bound = row.prefix_bound_thinking
            self.trigger_event(
                self.ModelChanged,
                model=name,
                context_window=window,
                reserved_output=reserved,
                thinking_bound=thinking_bound,
                tokenizer_ratio=row.tokenizer_ratio if tokenizer_ratio is None else tokenizer_ratio,
            )
        if settings is not None and settings != self.settings:
            self.trigger_event(
                self.SettingsChanged,
                settings=settings,
                settings_fingerprint=settings.fingerprint,
            )

    def check_room_in_view(self, count: CountText) -> None:
        """Raises `ContextTooSmallError` when what no compaction reduces does not fit the
        budget: the system prompt, the tools, the system messages in view, the room kept for
        summaries and the last exchange at its smallest, calibrated; the check a start and an
        append make (`check_room`), for the session as it stands (after a reconfiguration)."""
        entries, irreducible = self.entries, 0
        # As `system_message_tokens`, left uncached: a check changes nothing a replay derives.
        system_messages = self.counted_system_tokens
        if system_messages is None:
            instructions = (e.shown_tokens for e in entries if e.message.is_system)
            system_messages = sum(instructions, self.carried_tokens)
        if entries:
            last = entries[-1]
            if last.message.is_system:
                system_messages -= last.shown_tokens  # counted with its exchange
            shown = last.block_tokens
            irreducible = exchange_need(
                last.message,
                shown,
                count,
                entries[:-1],
                last.truncations,
                shown,
                salient_of(self.settings),
            )
        check_room(
            self.limits,
            self.system_tokens,
            self.tools_tokens,
            irreducible,
            calibration=self.calibration,
            what="the last exchange at its smallest (thinking, server tools and system "
            "messages whole)",
            system_messages=system_messages,
        )

    def instruct_system_prompt(self, system: str) -> Message | None:
        """Records a new system prompt as a system message (for a model that takes them),
        leaving the top of the prompt as it is. Returns the message to append now, after the
        user turn awaiting a reply, or `None` when it waits for the next user message."""
        queued = not self.awaiting_reply
        self.trigger_event(self.SystemPromptInstructed, system=system, queued=queued)
        return None if queued else instruction_message(system)

    def instruct_tools(self, tools: Sequence[dict[str, Any]]) -> tuple[bool, Message | None]:
        """Records new tools as a tool-change system message (for a model that takes them),
        leaving the top-level `tools` as they are (`ToolsInstructed`). Returns whether the
        change is given so (`False` when a tool keeps its name but changes its definition:
        the caller rewrites `tools` instead), and the message to append now (`None` when it
        waits for the next user message, or nothing differs)."""
        current = self.instructed_tools if self.instructed_tools is not None else self.tools
        if {tool_key(t): t for t in current} == {tool_key(t): t for t in tools}:
            return True, None
        message = tool_change_message(current, tools)
        if message is None:
            return False, None
        queued = not self.awaiting_reply
        self.trigger_event(
            self.ToolsInstructed,
            tools=tuple(dict(t) for t in tools),
            queued=queued,
            message=message,
        )
        return True, None if queued else message
