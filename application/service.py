"""`Sessions`: the application service a host embeds.

Each public method is one command or query, and reads load → decide → act → save: a unit of
work (`unit_of_work`) loads the session, holds its locks, retries on a concurrent write and
saves every new event in one transaction; the domain decides (`abridged.domain.planner`);
collaborators act through the ports (`ServicePorts`). A command that fails raises a typed
error and saves nothing it should not.

The commands are carried out by capability: `appending` (a message, counted once, shaped to
fit), `preparing` (the next request: prune, compact, downgrade, fit; overflows), `compactor`
(carrying out prunes, downgrades and compactions), `lifecycle` (reconfigure, clear, resume),
`starting`, `erasing`, `background`; `store` is eventsourcing's application underneath.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate

from abridged.application.appending import AppendCommands, Appender
from abridged.application.background import BackgroundCompactions
from abridged.application.chain import correlation
from abridged.application.compactor import Compactor
from abridged.application.completion import completion, driven, still_too_long
from abridged.application.counting import CheckedCounter
from abridged.application.erasing import DeleteCommands
from abridged.application.guard import GuardedSummarizer
from abridged.application.inputs import as_session_id, reason_text
from abridged.application.lifecycle import Lifecycle, LifecycleCommands
from abridged.application.loading import SessionLoader
from abridged.application.locks import CommandLocks, CompactionLocks, ProcessLocks
from abridged.application.management import (
    CompactionRecord,
    SessionPage,
    SessionStats,
    compaction_records,
    derived_sessions,
    list_sessions,
    session_stats,
)
from abridged.application.options import SessionsOptions, options_of
from abridged.application.overflow import OverflowCommands, Overflows
from abridged.application.ports import (
    ChatModel,
    CompactionReport,
    Metrics,
    Redactor,
    Summarizer,
    TokenCounter,
)
from abridged.application.preparing import PrepareCommands, PreparedRequest, Preparer
from abridged.application.service_ports import ServicePorts
from abridged.application.starting import StartCommands
from abridged.application.store import SessionMapper, SessionStore
from abridged.application.summaries import SummaryWriter
from abridged.application.topics import register_legacy_topics
from abridged.application.unit_of_work import UnitOfWork
from abridged.domain.capabilities import ModelCapabilities
from abridged.domain.errors import InvalidArgumentError
from abridged.domain.session import Session
from abridged.domain.settings import (
    parse_model_windows,
)

__all__ = [
    "CompactionReport",
    "PreparedRequest",
    "SessionMapper",
    "Sessions",
    "as_session_id",
    "still_too_long",
]

# The library logs through the standard `logging` module only; `abridged/__init__.py` adds a
# NullHandler, so nothing is printed unless the host configures logging.
logger = logging.getLogger(__name__)


class Sessions(
    AppendCommands,
    PrepareCommands,
    OverflowCommands,
    LifecycleCommands,
    DeleteCommands,
    StartCommands,
    SessionStore,
):
    """Event-sourced conversation sessions that always yield a valid, in-budget request."""

    name = "Sessions"

    def __init__(
        self,
        *,
        counter: TokenCounter,
        summarizer: Summarizer,
        chat_model: ChatModel | None = None,
        options: SessionsOptions | None = None,
        **keywords: Any,
    ) -> None:
        """The service on `counter`, `summarizer` and, for `complete`, `chat_model`.

        Every other option (`hooks`, `metrics`, `env`, `redactor`, ...) is a field of
        `SessionsOptions`, whose docstrings say what each does, given as a keyword or in
        `options` (keywords win); `AsyncSessions` takes the same. Raises
        `InvalidArgumentError` for an option it does not have, or a value of the wrong
        type."""
        self.options = options = options_of("Sessions", options, keywords)
        self.counter = counter
        counter = CheckedCounter(counter)  # what it returns is recorded: hold it to its contract
        self.max_message_bytes = options.max_message_bytes
        self.summarizer = GuardedSummarizer(summarizer, options.summarizer_breaker)
        self.redactor: Redactor = options.redactor
        self.writer = SummaryWriter(counter, self.summarizer, self.redactor)
        self.chat_model = chat_model
        self.hooks = options.hooks
        self.context_provider = options.context_provider
        self.metrics: Metrics = options.metrics
        self.read_provider_error = options.read_provider_error
        self.erase_events = options.erase_events
        self.locks: CompactionLocks = options.locks if options.locks is not None else ProcessLocks()
        # Recently used sessions stay in memory and are fast-forwarded from the store, so a
        # command decodes only the events it has not seen. eventsourcing reads a size of "0"
        # as "no limit"; here it turns the cache off, as a user would expect.
        settings = {"AGGREGATE_CACHE_MAXSIZE": "256", **options.env}
        if settings["AGGREGATE_CACHE_MAXSIZE"].strip() == "0":
            settings["AGGREGATE_CACHE_MAXSIZE"] = ""
        register_legacy_topics()
        super().__init__(env=settings)
        self.loader = SessionLoader(self.repository)
        self.model_windows = {
            **parse_model_windows(self.env.get("ABRIDGED_MODEL_WINDOWS") or ""),
            **options.model_windows,
        }
        self.model_capabilities = dict(options.model_capabilities)
        self.ports = ServicePorts(
            counter=counter,
            summarizer=self.summarizer,
            writer=self.writer,
            redactor=self.redactor,
            metrics=self.metrics,
            hooks=self.hooks,
            context_provider=self.context_provider,
            chat_model=chat_model,
            model_windows=self.model_windows,
            model_capabilities=self.model_capabilities,
            max_message_bytes=self.max_message_bytes,
        )
        recorders = (self.recorder, *([self.snapshots.recorder] if self.snapshots else []))
        self.uow = UnitOfWork(self.loader, self.save, self.events, self.locks, None, recorders)
        self.compactor = Compactor(self.uow, self.ports)
        self.background = BackgroundCompactions(
            self.uow, self.ports, self.compactor, automatic=options.background
        )
        self.appender = Appender(self.uow, self.ports, self.background)
        self.preparer = Preparer(
            self.uow, self.ports, self.compactor, self.appender, defer=options.defer_compaction
        )
        self.lifecycle = Lifecycle(self.uow, self.ports, self.appender, self.compactor)
        self.overflows = Overflows(self.uow, self.ports, self.compactor, self.preparer)

    @property
    def command_locks(self) -> CommandLocks:
        """The locks that keep one command at a time per session in this process."""
        return self.uow.command_locks

    @command_locks.setter
    def command_locks(self, locks: CommandLocks) -> None:
        self.uow.command_locks = locks

    def capabilities(self, model: str) -> ModelCapabilities:
        """What `model` checks and accepts: the host's rows, then the built-in table
        (`abridged.domain.capabilities.capabilities_for`)."""
        return self.ports.capabilities(model)

    def correlation(self, correlation_id: str | None) -> AbstractContextManager[None]:
        """`with sessions.correlation("req-42"): ...`: every event the block's commands
        store records the host's correlation id (a request or trace id, at most 256
        printable characters), shown by `history` and `audit`; raises
        `InvalidArgumentError` for a blank or over-long id."""
        return correlation(correlation_id)

    # Commands.

    @contextmanager
    def compaction_lock(self, session_id: UUID | str) -> Iterator[None]:
        """Holds the session's compaction lock: no other compaction of it runs meanwhile."""
        with self.uow.compaction_lock(as_session_id(session_id)):
            yield

    def close(self) -> None:
        """Waits for background compactions and for the commands running in other threads,
        then closes the store. Every later call raises `ServiceClosedError`; closing again
        does nothing."""
        self.background.shutdown()
        if self.uow.closed:
            return
        self.uow.close_when_idle()
        super().close()

    def request_compaction(self, session_id: UUID | str, reason: str = "requested") -> None:
        """Asks for a compaction mid-turn; it runs at the first request of the next turn."""
        session_id = as_session_id(session_id)
        reason = reason_text(reason)

        def command() -> None:
            session = self.uow.load(session_id)
            session.request_compaction(reason)
            self.uow.save(session)

        self.uow.run(session_id, command)

    def withdraw_turn(
        self,
        session_id: UUID | str,
        *,
        position: int | None = None,
        reason: str = "withdrawn by the host",
    ) -> int:
        """Takes the end of the conversation out of what the model sees: the messages from
        `position` (by default the last user prompt in view: the whole last turn) to the
        end, recorded as `TurnWithdrawn`; returns how many. History keeps them; the session
        goes on from the message before, and the next message appended takes `position`.
        For a turn the API refused (`stop_reason: "refusal"`), which it would refuse again
        while the request holds it, a prompt the user edits or asks again, or a tool result
        to give again (see docs/embedding.md, "Taking a turn back").

        Raises `TurnNotWithdrawableError`, writing nothing, when the retained tail does not
        hold that message (a compaction summarized it) or no user prompt is in view."""
        session_id = as_session_id(session_id)
        reason = reason_text(reason)
        if position is not None and (
            isinstance(position, bool) or not isinstance(position, int) or position < 0
        ):
            raise InvalidArgumentError(f"position must be an int from 0, got {position!r:.40}")

        def command() -> int:
            session = self.uow.load(session_id)
            count = session.withdraw_turn(reason, position)
            self.uow.save(session)
            return count

        return self.uow.run(session_id, command)

    complete = driven(completion)
    """Prepares the request, sends it through the chat model and records the reply: the
    loop of `abridged.application.completion.completion`, whose docstring says what it
    takes and decides (`AsyncSessions.complete` runs the very same loop, awaited)."""

    # Queries.

    def session(self, session_id: UUID | str, version: int | None = None) -> Session:
        """The session as it is now (or as it was at `version`): a copy of its own.

        Raises `UnknownSessionError`, or `SessionDeletedError` (a subclass) for a deleted
        session's current state; its earlier versions stay readable, for audits.
        `InvalidArgumentError` when `version` is not a positive int."""
        if version is not None and (
            isinstance(version, bool) or not isinstance(version, int) or version < 1
        ):
            raise InvalidArgumentError(f"version must be an int from 1, got {version!r:.40}")
        return self.uow.session(as_session_id(session_id), version)

    def list_sessions(
        self,
        *,
        metadata: Mapping[str, str] | None = None,
        tags: Iterable[str] = (),
        limit: int = 50,
        cursor: str | None = None,
    ) -> SessionPage:
        """Sessions, newest first, one page at a time: those whose metadata has every given
        key with the given value and that carry every given tag. Deleted sessions are not
        listed. Pass the page's `next_cursor` as `cursor` for the next page."""
        self.uow.check_open()
        return list_sessions(self, metadata=metadata, tags=tags, limit=limit, cursor=cursor)

    def stats(self, session_id: UUID | str) -> SessionStats:
        """Totals of the session's history: messages, requests, provider usage (cache reads
        and writes included), compactions by trigger, and how far estimates were off."""
        session_id = as_session_id(session_id)
        self.session(session_id)
        return session_stats(self.history(session_id))

    def compactions(self, session_id: UUID | str) -> list[CompactionRecord]:
        """Every compaction of the session, oldest first: when, why, what was summarized,
        tokens before and after, and the summary text."""
        session_id = as_session_id(session_id)
        self.session(session_id)
        return compaction_records(self.history(session_id))

    def derived_sessions(self, session_id: UUID | str) -> tuple[UUID, ...]:
        """The sessions started from this one by `clear_session` / `resume_session`, and
        from those in turn, oldest first: each holds a copy of some of its content."""
        return derived_sessions(self, as_session_id(session_id))

    def history(self, session_id: UUID | str) -> list[Aggregate.Event]:
        """Every event of the session, oldest first: the audit trail."""
        return self.uow.history(as_session_id(session_id))
