"""A session's lifecycle: reconfigured mid-session, cleared, resumed.

`reconfigure` records what changed (system prompt, tools, model, settings) as events of the
session, so the next request uses it and a replay re-derives it. `continue_session` starts a
new session linked to its parent (`Started.parent_id`, `origin`): `clear` carries the parent's
summary into a fresh thread; `resume` copies the whole conversation when it fits below the new
session's threshold, and starts from the parent's summary otherwise. The parent is never
changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from abridged.application.appending import Appender
from abridged.application.compactor import Compactor
from abridged.application.inputs import (
    as_message,
    as_session_id,
    check_system_text,
    optional_count,
    optional_settings,
    optional_text,
)
from abridged.application.ports import SummarizerError
from abridged.application.service_ports import ServicePorts
from abridged.application.starting import check_start_arguments, new_session
from abridged.application.summaries import SummaryRequest
from abridged.application.unit_of_work import UnitOfWork
from abridged.domain import planner, thinking_plan
from abridged.domain.context import SummaryChunk
from abridged.domain.errors import CompactionFailedError, InvalidSettingsError
from abridged.domain.inputs import check_tool_definitions, encoded_size
from abridged.domain.messages import JSON, Message
from abridged.domain.planner import Decision
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings, Limits, context_window_for
from abridged.domain.tokens import (
    REQUEST_OVERHEAD,
    message_tokens,
    system_tokens,
    tools_tokens,
)
from abridged.domain.vocabulary import SessionOrigin

__all__ = ["Lifecycle", "LifecycleCommands"]

START_KEYWORDS = frozenset(
    {"model", "context_window", "max_output_tokens", "system", "tools", "settings"}
)
"""What a resumed session may change from its parent."""


class Lifecycle:
    """The lifecycle commands of one service (see the module)."""

    def __init__(
        self, uow: UnitOfWork, ports: ServicePorts, appender: Appender, compactor: Compactor
    ) -> None:
        self.uow = uow
        self.ports = ports
        self.appender = appender
        self.compactor = compactor

    def reconfigure(
        self,
        session_id: UUID,
        system: str | None,
        tools: Sequence[Mapping[str, JSON]] | None,
        new: tuple[str | None, int | None, int | None],
        settings: CompactionSettings | None,
        messages: Sequence[Message] = (),
        top_level: bool = False,
    ) -> list[str]:
        """See `Sessions.reconfigure`; `new` is the model, its context window and output
        reservation, each `None` when unchanged; `messages` are appended after the change,
        in the same write."""
        model, context_window, max_output_tokens = new
        counted_system = (
            (system, system_tokens(system, self.ports.counter.count))
            if system is not None
            else None
        )
        tool_list = tuple(dict(t) for t in tools) if tools is not None else None
        counted_tools = (
            (tool_list, tools_tokens(tool_list, self.ports.counter.count))
            if tool_list is not None
            else None
        )

        message_counts = self.appender.counted_all(messages)

        def command() -> list[str]:
            session = self.uow.load(session_id)
            new_model = None
            if model is not None or context_window is not None or max_output_tokens is not None:
                name = model or session.model
                window = context_window
                if window is None:
                    # The same model keeps its window; another gets its own.
                    window = session.context_window if name == session.model else None
                new_model = (
                    name,
                    context_window_for(name, window, self.ports.model_windows),
                    session.reserved_output if max_output_tokens is None else max_output_tokens,
                )
            top_system = counted_system
            instructed = (
                counted_system is not None
                and not top_level
                and (new_model is None or new_model[0] == session.model)
                and self.ports.capabilities(session.model).system_messages
            )
            if instructed and counted_system is not None:
                # The model takes system messages: the new prompt goes after a user turn and the
                # top of the prompt (with the cache and thinking bound to it) stays as it was.
                top_system = None
                current = session.instructed_system or session.system
                if counted_system[0] != current:
                    fixed = session.system_tokens + session.tools_tokens
                    if fixed + counted_system[1] >= session.limits.budget:
                        raise InvalidSettingsError(
                            f"the system prompt and tools ({fixed + counted_system[1]} tokens) "
                            f"would not fit the budget of {session.limits.budget} tokens"
                        )
                    now = session.instruct_system_prompt(counted_system[0])
                    if now is not None:
                        counts = self.appender.counted(now)
                        self.appender.append_counted(session, now, counts, None, None, save=False)
            top_tools = counted_tools
            if (
                counted_tools is not None
                and not top_level
                and (new_model is None or new_model[0] == session.model)
                and self.ports.capabilities(session.model).tool_changes
            ):
                # Tools added and withdrawn by a system message: the top-level `tools` (and the
                # cache and thinking bound to them) stay as they were.
                given, now = session.instruct_tools(list(counted_tools[0]))
                if given:
                    top_tools = None
                if now is not None:
                    counts = self.appender.counted(now)
                    self.appender.append_counted(session, now, counts, None, None, save=False)
            revision = session.prefix_revision
            leaving = session.model
            session.reconfigure(
                system=top_system,
                tools=top_tools,
                model=new_model,
                settings=settings,
                thinking_bound=(
                    None
                    if new_model is None
                    else self.ports.capabilities(new_model[0]).prefix_bound_thinking
                ),
                tokenizer_ratio=(
                    None if new_model is None else self.ports.tokenizer_ratio(new_model[0])
                ),
            )
            if session.prefix_revision != revision and thinking_plan.bound(session):
                # A new system prompt or tools change the prefix of every thinking block shown.
                self.compactor.downgrade_reasoning(session, True)
            if session.model != leaving:
                # The new model may not read the old one's thinking: the API would drop it unsaid.
                self.compactor.drop_unreadable(session, leaving)
                if thinking_plan.bound(session):
                    # A model that binds thinking to its prefix checks each block it is sent:
                    # blocks written before the prefix last changed (the old model kept them
                    # through a compaction) would be refused.
                    self.compactor.downgrade_reasoning(session, True)
            recorded = self._checked(session)
            self.appender.append_all(session, messages, message_counts)
            if session.pending_events:
                self.uow.save(session)
                self.appender.after_appending(session, messages)
            return recorded

        return self.uow.run(session_id, command)

    def _checked(self, session: Session) -> list[str]:
        """The names of the events a reconfiguration recorded, once what no compaction
        reduces is checked to fit still: every request would overflow otherwise."""
        if session.pending_events:
            session.check_room_in_view(self.ports.counter.count)
        return [type(e).__name__ for e in session.pending_events]

    def continue_session(
        self,
        parent_id: UUID,
        origin: SessionOrigin,
        *,
        instructions: str | None = None,
        changes: Mapping[str, object] | None = None,
    ) -> UUID:
        """See `Sessions.clear_session` and `Sessions.resume_session`."""
        changes = dict(changes or {})
        unknown = set(changes) - START_KEYWORDS
        if unknown:
            raise InvalidSettingsError(
                f"a resumed session cannot change {', '.join(sorted(unknown))}; it may change "
                f"{', '.join(sorted(START_KEYWORDS))}"
            )
        parent = self.uow.session(parent_id)
        start: dict[str, Any] = {
            "model": parent.model,
            "max_output_tokens": parent.reserved_output,
            "context_window": parent.context_window,
            "system": parent.system,
            "tools": parent.tools,
            "settings": parent.settings,
        }
        if "model" in changes and "context_window" not in changes:
            start["context_window"] = None  # the new model's own window
        start.update(changes)
        check_start_arguments(
            start["model"], start["max_output_tokens"], start["context_window"], start["system"]
        )
        optional_settings(start["settings"])
        window = context_window_for(
            start["model"], start["context_window"], self.ports.model_windows
        )
        limits = Limits(
            window, start["max_output_tokens"], start["settings"] or CompactionSettings()
        )
        messages = _whole_history(self.uow, parent_id) if origin == "resume" else None
        if messages is not None and not _fits(self.ports, start, limits, messages):
            messages = None
        summary = (
            None
            if messages is not None
            else _parent_summary(self.ports, parent, limits, instructions)
        )
        session = new_session(
            self.ports,
            **start,
            session_id=None,
            parent_id=parent_id,
            origin=origin,
            parent_summary=summary,
        )
        # Each message is saved with the session's start, in one transaction.
        for message in messages or ():
            self.appender.append_counted(
                session, message, self.appender.counted(message), None, None, save=False
            )
        self.uow.save_new(session)
        return session.id


def _whole_history(uow: UnitOfWork, session_id: UUID) -> list[Message]:
    """The conversation as it stands: every message appended, less those withdrawn (a
    withdrawal takes the messages from its position on; the next message reuses it)."""
    messages: list[Message] = []
    for event in uow.history(session_id):
        if isinstance(event, Session.MessageAppended):
            messages.append(event.message)
        elif isinstance(event, Session.TurnWithdrawn):
            del messages[event.position :]
    return messages


def _fits(
    ports: ServicePorts, start: Mapping[str, Any], limits: Limits, messages: list[Message]
) -> bool:
    if not start["tools"] and any(m.tool_uses or m.tool_results for m in messages):
        return False  # its tool calls could not be sent without tools: from the summary
    fixed = (
        REQUEST_OVERHEAD
        + system_tokens(start["system"], ports.counter.count)
        + tools_tokens(tuple(start["tools"]), ports.counter.count)
    )
    total = fixed
    for message in messages:
        total += message_tokens(message, ports.counter.count)
        if total >= limits.threshold:
            return False
    return True


def _parent_summary(
    ports: ServicePorts, parent: Session, limits: Limits, instructions: str | None
) -> SummaryChunk | None:
    """One chunk standing for the parent's whole conversation (its chunks and its tail),
    sized for the new session's limits; `None` for a parent with nothing to carry."""
    if not parent.entries and not parent.summaries:
        return None
    decision = Decision(
        trigger="manual",
        estimate=parent.estimate(),
        window=limits.window,
        budget=limits.budget,
        threshold=limits.threshold,
        floor=limits.settings.threshold_floor_tokens,
        reserved_output=limits.reserved_output,
        settings_fingerprint=limits.settings.fingerprint,
        retained_from=parent.message_count,
        turns_kept=0,
        resummarize=bool(parent.summaries),
        summary_max_tokens=limits.summary_tokens,
        reason="the parent's summary for the session that continues it",
    )
    earlier = tuple(parent.summaries)
    request = SummaryRequest(
        decision=decision,
        messages=planner.messages_to_summarize(parent, parent.message_count),
        earlier=earlier,
        first_position=earlier[0].first_position if earlier else 0,
        generation=0,
        session_model=parent.model,
        folding_strategy="resummarize",
        include_thinking=parent.settings.summarize_thinking,
        instructions=instructions,
    )
    try:
        written = ports.writer.write(request)
    except SummarizerError as error:
        raise CompactionFailedError(
            f"the parent's summary could not be written: {error}; nothing was saved"
        ) from error
    return SummaryChunk(
        written.text,
        request.first_position,
        parent.message_count - 1,
        written.as_text_tokens,  # its block, if any, is not carried: it reads as text
        written.model,
        0,
    )


class LifecycleCommands:
    """The service's lifecycle commands (mixed into `Sessions`)."""

    lifecycle: Lifecycle

    def reconfigure(
        self,
        session_id: UUID | str,
        *,
        system: str | None = None,
        tools: Sequence[Mapping[str, JSON]] | None = None,
        model: str | None = None,
        context_window: int | None = None,
        max_output_tokens: int | None = None,
        settings: CompactionSettings | None = None,
        messages: Sequence[Message | Mapping[str, JSON] | Any] = (),
        top_level: bool = False,
    ) -> list[str]:
        """Changes the system prompt, tools, model (with its window and output reservation)
        or settings mid-session; the next request uses them. Returns the names of the events
        the changes recorded (one per change; none when nothing differs).

        For a model that takes system messages, a new system prompt or tools go as a system
        message after a user turn (`SystemPromptInstructed`, `ToolsInstructed`), the top of
        the prompt left as it is. `top_level=True` rewrites the top instead
        (`SystemPromptChanged`, `ToolsChanged`), as for other models: for a caller whose
        requests carry a top level of their own, as `abridged serve` forwards its client's.

        `messages`, when given, are appended after the changes in the same write, as
        `append_messages` would append them: the messages a client sent with its new system
        prompt or tools. All or nothing: when one is refused, nothing is recorded.

        Raises `InvalidSettingsError` for inconsistent limits or a system prompt and tools
        too large for the budget, `ContextTooSmallError` when what no compaction reduces
        (the system messages in view, the room for summaries and the last exchange too,
        calibrated) would not fit, `InvalidToolDefinitionError` for tools `start_session`
        would refuse, `InvalidMessageError` for removing every tool while tool calls are in
        the context, `InvalidArgumentError` for text UTF-8 cannot encode; nothing is recorded
        then."""
        new = (
            optional_text(model, "model", blank=False),
            optional_count(context_window, "context_window"),
            optional_count(max_output_tokens, "max_output_tokens"),
        )
        system = optional_text(system, "system")
        if system is not None:
            check_system_text(system)
            encoded_size(system, "the system prompt")
        if tools is not None:
            check_tool_definitions(tools)  # as `start_session` checks them
        settings = optional_settings(settings)
        parsed = tuple(as_message(message) for message in messages)
        return self.lifecycle.reconfigure(
            as_session_id(session_id), system, tools, new, settings, parsed, top_level
        )

    def clear_session(self, session_id: UUID | str, *, instructions: str | None = None) -> UUID:
        """Starts a fresh session that continues `session_id` (its parent) from the parent's
        summary, with the parent's model, prompt, tools and settings; returns its id.

        The parent is left as it is. Raises `CompactionFailedError` when the summary cannot
        be written (nothing is saved)."""
        session_id = as_session_id(session_id)
        instructions = optional_text(instructions, "instructions")
        return self.lifecycle.continue_session(session_id, "clear", instructions=instructions)

    def resume_session(self, session_id: UUID | str, /, **changes: object) -> UUID:
        """Starts a session that resumes `session_id`: the whole conversation, copied, when it
        fits below the new session's threshold, else the parent's summary; returns its id.

        `changes` are `start_session` keywords (`model`, `context_window`,
        `max_output_tokens`, `system`, `tools`, `settings`) that differ from the parent's."""
        session_id = as_session_id(session_id)
        return self.lifecycle.continue_session(session_id, "resume", changes=changes)
