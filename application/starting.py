"""A new session: its arguments checked, its system prompt and tools counted, its `Started`.

`new_session` builds the aggregate (not yet saved) for `start_session`, and for the sessions
`clear_session` / `resume_session` start from a parent (`abridged.application.lifecycle`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID, uuid4

from abridged.application.appending import Appender
from abridged.application.inputs import (
    as_message,
    as_session_id,
    check_system_text,
    encodable,
    optional_settings,
)
from abridged.application.service_ports import ServicePorts
from abridged.application.unit_of_work import UnitOfWork
from abridged.domain.context import SummaryChunk
from abridged.domain.degradation import check_room
from abridged.domain.errors import InvalidArgumentError, UnknownSessionError
from abridged.domain.inputs import check_tool_definitions, encoded_size
from abridged.domain.messages import JSON, Message
from abridged.domain.metadata import checked_metadata, checked_tags
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings, Limits, context_window_for
from abridged.domain.tokens import system_tokens, tools_tokens
from abridged.domain.vocabulary import SessionOrigin

__all__ = ["StartCommands", "new_session"]

logger = logging.getLogger(__name__)


def new_session(
    ports: ServicePorts,
    *,
    model: str,
    max_output_tokens: int,
    context_window: int | None,
    system: str,
    tools: Sequence[Mapping[str, JSON]],
    settings: CompactionSettings | None,
    session_id: UUID | str | None,
    metadata: Mapping[str, str] | None = None,
    tags: Iterable[str] = (),
    parent_id: UUID | None = None,
    origin: SessionOrigin | None = None,
    parent_summary: SummaryChunk | None = None,
) -> Session:
    """The session `start_session` describes, started but not saved; raises the errors
    `Sessions.start_session` documents, before anything is counted."""
    settings = optional_settings(settings) or CompactionSettings()
    check_start_arguments(model, max_output_tokens, context_window, system)
    check_tool_definitions(tools)
    context_window = context_window_for(model, context_window, ports.model_windows)
    limits = Limits(context_window, max_output_tokens, settings)  # validates first
    checked = checked_metadata(metadata)
    tag_tuple = checked_tags(tags)
    tool_list = tuple(dict(t) for t in tools)
    counted_system = system_tokens(system, ports.counter.count)
    counted_tools = tools_tokens(tool_list, ports.counter.count)
    check_room(limits, counted_system, counted_tools)
    session = Session(  # type: ignore[call-arg]  # `id` is eventsourcing's
        id=uuid4() if session_id is None else _new_session_id(session_id),
        model=model,
        context_window=context_window,
        reserved_output=max_output_tokens,
        settings=settings,
        settings_fingerprint=settings.fingerprint,
        system=system,
        tools=tool_list,
        system_tokens=counted_system,
        tools_tokens=counted_tools,
        token_counter=ports.counter.name,
        metadata=checked,
        tags=tag_tuple,
        parent_id=parent_id,
        origin=origin,
        parent_summary=parent_summary,
        thinking_bound=ports.capabilities(model).prefix_bound_thinking,
        tokenizer_ratio=ports.tokenizer_ratio(model),
    )
    chat_model = ports.chat_model
    management = chat_model.context_management if chat_model else None
    if management:
        session.warn_double_compaction(
            chat_model.name if chat_model else "provider",
            f"the provider's context management is configured too: {dict(management)}; "
            "both may compact the same conversation",
        )
        logger.warning("session %s: double compaction configured", session.id)
    return session


def _new_session_id(session_id: object) -> UUID:
    try:
        return as_session_id(session_id)  # type: ignore[arg-type]
    except UnknownSessionError:
        raise InvalidArgumentError(f"session_id must be a UUID, got {session_id!r:.80}") from None


def check_start_arguments(
    model: object, max_output_tokens: object, context_window: object, system: object
) -> None:
    """Typed errors for arguments of the wrong type, before they fail deep inside."""
    if not isinstance(model, str) or not model.strip():
        raise InvalidArgumentError(f"model must be a model name, got {model!r:.80}")
    encodable(model, "model")
    for name, value in (
        ("max_output_tokens", max_output_tokens),
        ("context_window", context_window),
    ):
        if value is None and name == "context_window":
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgumentError(
                f"{name} must be an int, got {type(value).__name__} {value!r:.40}"
            )
    if not isinstance(system, str):
        raise InvalidArgumentError(f"system must be a string, got {type(system).__name__}")
    check_system_text(system)
    encoded_size(system, "the system prompt")


class StartCommands:
    """The service's command that starts a session (mixed into `Sessions`)."""

    uow: UnitOfWork
    ports: ServicePorts
    appender: Appender

    def start_session(
        self,
        *,
        model: str,
        max_output_tokens: int,
        context_window: int | None = None,
        system: str = "",
        tools: Sequence[Mapping[str, JSON]] = (),
        settings: CompactionSettings | None = None,
        session_id: UUID | str | None = None,
        metadata: Mapping[str, str] | None = None,
        tags: Iterable[str] = (),
        messages: Sequence[Message | Mapping[str, JSON] | Any] = (),
    ) -> UUID:
        """Starts a session and returns its id; raises `InvalidSettingsError` for bad limits.

        `messages`, when given, are appended in the same write as the start, as
        `append_messages` would append them: a conversation brought in whole. All or
        nothing: when one is refused its error is raised (with a note naming which), and no
        session is started.

        `context_window` defaults to the model's, from `abridged.domain.settings.MODEL_WINDOWS`
        and the service's `model_windows`.
        Raises `ContextTooSmallError` when the system prompt and tools leave no room for a
        request in the window. `metadata` (string keys and values) and `tags` are recorded
        with the start and filter `list_sessions`; `InvalidMetadataError` when they are not
        short strings.

        When the chat model adds the provider's own context management to requests, a
        `DoubleCompactionConfigured` warning is recorded with the start."""
        session = new_session(
            self.ports,
            model=model,
            max_output_tokens=max_output_tokens,
            context_window=context_window,
            system=system,
            tools=tools,
            settings=settings,
            session_id=session_id,
            metadata=metadata,
            tags=tags,
        )
        parsed = tuple(as_message(message) for message in messages)
        if parsed:
            self.appender.append_all(session, parsed, self.appender.counted_all(parsed))
        self.uow.save_new(session)
        self.appender.after_appending(session, parsed)
        return session.id
