"""Appending a message: checked, counted once, shaped to fit, recorded.

`Appender.append` is the command behind `append_message` and `record_reply`: it checks the
message's size, counts its blocks once (a retry after a concurrent write does not count
again), and records it with the truncations and degradations that let every request fit
(`append_counted`). `Appender.append_many` appends several the same way, in one transaction.
Lifecycle commands and `append_and_prepare` append through `append_counted` into a
transaction of their own.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from uuid import UUID

from abridged.application.background import BackgroundCompactions
from abridged.application.cancellation import CancelScope, current_scope
from abridged.application.inputs import (
    as_message,
    as_session_id,
    as_usage,
    optional_text,
    reply_model,
    reply_usage,
)
from abridged.application.ports import MetricNames
from abridged.application.service_ports import ServicePorts
from abridged.application.transcodings import encodable_json
from abridged.application.unit_of_work import UnitOfWork
from abridged.domain.errors import MessageAlreadyAppendedError, RoleOrderError, SessionError
from abridged.domain.inputs import check_message_size, check_token_count
from abridged.domain.messages import JSON, Message, Role
from abridged.domain.replies import hidden_blocks
from abridged.domain.session import Session
from abridged.domain.tokens import message_block_tokens
from abridged.domain.usage import Usage

__all__ = ["AppendCommands", "Appender"]


LANDED_KEPT = 1_024
"""Sessions whose last awaited batch is remembered (a retry follows its call closely)."""


def _ends_with(session: Session, messages: Sequence[Message]) -> bool:
    """Whether the session's last messages are `messages`, in order."""
    entries = session.entries[-len(messages) :]
    return len(entries) == len(messages) and all(
        entry.message == message for entry, message in zip(entries, messages, strict=True)
    )


class Appender:
    """The appends of one service (see the module)."""

    def __init__(
        self, uow: UnitOfWork, ports: ServicePorts, background: BackgroundCompactions
    ) -> None:
        self.uow = uow
        self.ports = ports
        self.counter = ports.counter
        self.metrics = ports.metrics
        self.save = uow.save
        self.background = background
        self.landed: OrderedDict[UUID, tuple[tuple[Message, ...], CancelScope]] = OrderedDict()
        """The last batch each session saved for an awaited call, with the call's scope: a
        retry of it is refused when that call was cancelled (`append_many`)."""
        self._landed_lock = threading.Lock()

    def append(
        self,
        session_id: UUID,
        message: Message | Mapping[str, JSON],
        usage: Usage | None,
        request_estimate: int | None,
        reply: bool = False,
        counted: Callable[[], tuple[int, ...]] | None = None,
        model: str | None = None,
    ) -> int:
        """Appends `message` to the session in a transaction of its own; its position.
        `counted` gives the message's block counts when the caller counted them already;
        `model` wrote a reply (by default the session's model)."""
        parsed = as_message(message)
        # Size and encodability first: both bound what the checks after them cost.
        check_message_size(parsed, self.ports.max_message_bytes, encodable_json(parsed))
        if counted is None:
            counted = self.counted_once(parsed, hidden_blocks(parsed) if reply else frozenset())

        def command() -> int:
            session = self.uow.load(session_id)
            # A typed error for bad input before anything is tokenized; the aggregate checks
            # again before its event exists, and again on a retry after a concurrent write.
            session.check_append(parsed, reply=reply)
            return self.append_counted(
                session, parsed, counted(), usage, request_estimate, reply=reply, model=model
            )

        return self.uow.run(session_id, command)

    def append_many(self, session_id: UUID, messages: Sequence[Message]) -> tuple[int, ...]:
        """Appends `messages` in order, in one transaction: each checked, counted once and
        shaped as `append` would, with the session as the ones before it left it. Nothing is
        written when one of them is refused; the error's note names which. Their positions."""
        if not messages:
            return ()
        counts = self.counted_all(messages)

        def command() -> tuple[int, ...]:
            session = self.uow.load(session_id)
            with self._landed_lock:
                earlier = self.landed.get(session_id)
            if (
                earlier is not None
                and earlier[1].cancelled
                and earlier[0] == tuple(messages)
                and _ends_with(session, messages)
            ):
                with self._landed_lock:
                    self.landed.pop(session_id, None)  # refused once: sent again, it is new
                raise MessageAlreadyAppendedError(
                    f"these {len(messages)} messages are the session's last ones already: the "
                    "call that saved them was cancelled after its save; nothing was appended "
                    "again"
                )
            positions = self.append_all(session, messages, counts)
            self.save(session)
            self.after_appending(session, messages)
            scope = current_scope()
            with self._landed_lock:
                self.landed.pop(session_id, None)
                if scope is not None:
                    # An awaited call: cancelled during or after this save, its caller gets
                    # a CancelledError although the batch is saved, and may send it again.
                    self.landed[session_id] = (tuple(messages), scope)
                    while len(self.landed) > LANDED_KEPT:
                        self.landed.popitem(last=False)
            return positions

        return self.uow.run(session_id, command)

    def counted_all(self, messages: Sequence[Message]) -> list[Callable[[], tuple[int, ...]]]:
        """Each message's size checked, and its block counts to compute once (`counted_once`)."""
        for index, message in enumerate(messages):
            try:
                check_message_size(message, self.ports.max_message_bytes, encodable_json(message))
            except SessionError as error:
                noted(error, index, len(messages))
                raise
        return [self.counted_once(message) for message in messages]

    def append_all(
        self,
        session: Session,
        messages: Sequence[Message],
        counts: Sequence[Callable[[], tuple[int, ...]]],
    ) -> tuple[int, ...]:
        """Appends `messages` to `session` unsaved; a refused one raises its error with a note
        naming it (and the caller saves none of them). Their positions."""
        positions: list[int] = []
        for index, (message, counted) in enumerate(zip(messages, counts, strict=True)):
            at = session.message_count
            try:
                session.check_append(message)
                positions.append(
                    self.append_counted(session, message, counted(), None, None, save=False)
                )
            except SessionError as error:
                noted(error, index, len(messages), at)
                raise
        return tuple(positions)

    def after_appending(self, session: Session, messages: Sequence[Message]) -> None:
        """What saving appended messages starts: a background compaction after a reply."""
        if any(message.role is Role.ASSISTANT for message in messages):
            self.background.after_reply(session)

    def counted_once(
        self, message: Message, hidden: frozenset[int] = frozenset()
    ) -> Callable[[], tuple[int, ...]]:
        """The message's block counts, computed at the first call only: a command that runs
        again after a concurrent write does not tokenize again. The first call comes after
        the message's checks, so bad input fails before anything is counted. `hidden`
        blocks (of an incomplete reply, never shown) count 0."""
        return functools.cache(
            lambda: tuple(
                0 if index in hidden else tokens
                for index, tokens in enumerate(message_block_tokens(message, self.counter.count))
            )
        )

    def counted(self, message: Message) -> tuple[int, ...]:
        """The message's block counts, now."""
        return message_block_tokens(message, self.counter.count)

    def append_counted(
        self,
        session: Session,
        message: Message,
        counts: tuple[int, ...],
        usage: Usage | None,
        request_estimate: int | None,
        *,
        save: bool = True,
        reply: bool = False,
        model: str | None = None,
    ) -> int:
        estimate = (request_estimate or session.raw_estimate()) if usage is not None else None
        predicted = session.calibrated(estimate) if estimate else None
        session.append(
            message,
            counts,
            self.counter.count,
            usage=usage,
            request_estimate=request_estimate,
            reply=reply,
            model=model,
        )
        if save:
            self.save(session)
            if message.role is Role.ASSISTANT:
                self.background.after_reply(session)
        if usage is not None and predicted and usage.prompt_tokens:
            # Histograms take non-negative values: the size, and the direction apart.
            error = (usage.prompt_tokens - predicted) / predicted
            direction = "under" if error > 0 else "over"
            self.metrics.record(MetricNames.ESTIMATE_ERROR, abs(error), {"direction": direction})
        return session.message_count - 1


def noted(error: SessionError, index: int, of: int, at: int | None = None) -> None:
    """Adds to `error` a note naming which of `of` messages appended together it refused."""
    where = f" (it would have been at position {at})" if at is not None else ""
    error.add_note(f"message {index} of {of}{where}; none of them was appended")


class AppendCommands:
    """The service's commands that append a message (mixed into `Sessions`)."""

    appender: Appender

    def append_message(
        self, session_id: UUID | str, message: Message | Mapping[str, JSON] | Any
    ) -> int:
        """Appends a user or assistant message; returns its position in the history.

        `message` is a `Message`, its Messages API dict, or the anthropic SDK's `Message` /
        `BetaMessage` (a dict's blocks may be the SDK's too). A message too large for any
        request is stored whole and shown reduced (see `docs/content.md`).

        Raises `InvalidMessageError` (a subclass names the problem) and writes nothing when
        the message would make an invalid request, `ContextTooSmallError` when what it
        cannot reduce does not fit beside the system prompt and tools, `MessageTooLargeError`
        over `max_message_bytes`, `UnknownSessionError` for an unknown id.
        """
        return self.appender.append(as_session_id(session_id), as_message(message), None, None)

    def append_messages(
        self,
        session_id: UUID | str,
        messages: Sequence[Message | Mapping[str, JSON] | Any],
    ) -> tuple[int, ...]:
        """Appends several user or assistant messages in order, in one write; returns their
        positions in the history.

        Each is checked, counted and shown as `append_message` would, the session as the
        ones before it left it: the history and the state are those of appending them one
        by one, in one transaction instead of one each (a conversation brought in whole, a
        branch). All or nothing: when one is refused, its error (as `append_message` raises
        it, with a note naming which message) is raised and none is written. The batch an
        awaited call saved although it was cancelled, sent again, raises
        `MessageAlreadyAppendedError` (docs/embedding.md, "Cancellation and timeouts").
        """
        parsed = tuple(as_message(message) for message in messages)
        return self.appender.append_many(as_session_id(session_id), parsed)

    def record_reply(
        self,
        session_id: UUID | str,
        message: Message | Mapping[str, JSON] | Any,
        usage: Usage | Mapping[str, JSON] | Any | None = None,
        request_estimate: int | None = None,
        model: str | None = None,
    ) -> int:
        """Appends the model's reply with the usage the provider reported for the request.

        `message` may be the anthropic SDK's `Message` / `BetaMessage` as `create` returned
        it; its `usage` is then taken when `usage` is not given. `usage` may be a `Usage`,
        the API's usage JSON or the SDK's `Usage`.

        The usage calibrates the session's estimates (reported prompt tokens / estimated).
        Pass `request_estimate=prepared.context.raw_estimate` when per-turn content was sent;
        without it the estimate is re-derived from the session, which cannot know that content.

        A reply the provider cut short or left empty is recorded as returned; requests show it
        without its trailing thinking and empty text (`abridged.domain.replies`).

        `model` is the model that wrote the reply, by default the one the SDK reply (or its
        dict) names, else the session's: at a later change of model, its thinking stays in
        view exactly when the new model reads that model's thinking.
        """
        parsed = as_message(message)
        if parsed.role is not Role.ASSISTANT:
            raise RoleOrderError("a model reply is an assistant message")
        counted = as_usage(usage) if usage is not None else reply_usage(message)
        if request_estimate is not None:
            check_token_count(request_estimate, "request_estimate", zero=False)
        session_id = as_session_id(session_id)
        writer = optional_text(model, "model", blank=False) or reply_model(message)
        return self.appender.append(
            session_id, parsed, counted, request_estimate, reply=True, model=writer
        )
