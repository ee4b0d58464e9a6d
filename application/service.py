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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate

from abridged.application.appending import AppendCommands, Appender
from abridged.application.background import BackgroundCompactions
from abridged.application.chain import correlation
from abridged.application.compactor import Compactor
from abridged.application.erasing import DeleteCommands
from abridged.application.guard import BreakerSettings, GuardedSummarizer
from abridged.application.inputs import as_session_id
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
from abridged.application.notices import NoticeCallback
from abridged.application.overflow import ErrorReader, OverflowCommands, Overflows
from abridged.application.ports import (
    ChatModel,
    CompactionHooks,
    CompactionReport,
    ContextProvider,
    EventEraser,
    Metrics,
    ModelReply,
    NoMetrics,
    PromptTooLongError,
    ProviderError,
    Redactor,
    RequestOptions,
    Summarizer,
    TextCallback,
    TokenCounter,
)
from abridged.application.preparing import (
    PrepareCommands,
    PreparedRequest,
    Preparer,
    still_too_long,
)
from abridged.application.redaction import DefaultRedactor
from abridged.application.service_ports import ServicePorts
from abridged.application.starting import StartCommands
from abridged.application.store import SessionMapper, SessionStore
from abridged.application.summaries import SummaryWriter
from abridged.application.topics import register_legacy_topics
from abridged.application.unit_of_work import UnitOfWork
from abridged.domain.capabilities import ModelCapabilities, check_model_capabilities
from abridged.domain.errors import (
    InvalidArgumentError,
    InvalidMessageError,
    SessionError,
)
from abridged.domain.inputs import DEFAULT_MAX_MESSAGE_BYTES
from abridged.domain.messages import JSON
from abridged.domain.session import Session
from abridged.domain.settings import (
    check_model_windows,
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
        hooks: CompactionHooks | None = None,
        context_provider: ContextProvider | None = None,
        metrics: Metrics | None = None,
        read_provider_error: ErrorReader | None = None,
        erase_events: EventEraser | None = None,
        env: Mapping[str, str] | None = None,
        model_windows: Mapping[str, int] | None = None,
        locks: CompactionLocks | None = None,
        background: bool = True,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        summarizer_breaker: BreakerSettings | None = None,
        model_capabilities: Mapping[str, ModelCapabilities | Mapping[str, Any]] | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        """`metrics` receives the service's counters (default: none are reported);
        `read_provider_error` turns a provider SDK's exception into a `ProviderError`, so
        `report_overflow` accepts the SDK's own errors (`bootstrap` wires Anthropic's);
        `erase_events` lets `delete_session(..., erase=True)` remove a session's rows from
        the store (`bootstrap` wires it for SQLite and PostgreSQL). `model_windows` adds to
        (or overrides) the table of context windows by model name, as does
        `ABRIDGED_MODEL_WINDOWS="name=tokens,..."` in `env`. `model_capabilities` adds to
        (or overrides) the table of what each model checks and accepts
        (`abridged.domain.capabilities`: rows by model-name prefix, each a
        `ModelCapabilities` or a mapping of some of its fields, the rest the strictest).

        `locks` keep one compaction at a time per session (by default among this process's
        threads; `bootstrap` adds PostgreSQL's advisory locks for a shared server). With
        `background`, a reply past a session's `background_threshold_ratio` starts its
        compaction on a worker thread (`compact_soon`); without it, only the host starts one.

        `max_message_bytes` bounds one message (its JSON, in bytes); `summarizer_breaker`
        bounds each summarizer call in time and stops calling a summarizer that keeps failing
        (see `abridged.application.guard`).

        `redactor` replaces secrets in whatever the service derives from messages (summarizer
        input, summaries, the facts ledger); default `DefaultRedactor()`, `NoRedaction()` for
        none. The stored messages are kept as appended (see docs/security.md)."""
        if isinstance(max_message_bytes, bool) or not isinstance(max_message_bytes, int):
            raise InvalidArgumentError("max_message_bytes must be an int")
        if max_message_bytes < 1:
            raise InvalidArgumentError("max_message_bytes must be at least 1")
        self.counter = counter
        self.max_message_bytes = max_message_bytes
        self.summarizer = GuardedSummarizer(summarizer, summarizer_breaker)
        self.redactor: Redactor = redactor if redactor is not None else DefaultRedactor()
        self.writer = SummaryWriter(counter, self.summarizer, self.redactor)
        self.chat_model = chat_model
        self.hooks = hooks
        self.context_provider = context_provider
        self.metrics: Metrics = metrics or NoMetrics()
        self.read_provider_error = read_provider_error
        self.erase_events = erase_events
        self.locks: CompactionLocks = locks if locks is not None else ProcessLocks()
        # Recently used sessions stay in memory and are fast-forwarded from the store, so a
        # command decodes only the events it has not seen. eventsourcing reads a size of "0"
        # as "no limit"; here it turns the cache off, as a user would expect.
        settings = {"AGGREGATE_CACHE_MAXSIZE": "256", **(env or {})}
        if settings["AGGREGATE_CACHE_MAXSIZE"].strip() == "0":
            settings["AGGREGATE_CACHE_MAXSIZE"] = ""
        register_legacy_topics()
        super().__init__(env=settings)
        self.loader = SessionLoader(self.repository)
        self.model_windows = {
            **parse_model_windows(self.env.get("ABRIDGED_MODEL_WINDOWS") or ""),
            **check_model_windows(dict(model_windows or {})),
        }
        self.model_capabilities = check_model_capabilities(dict(model_capabilities or {}))
        self.ports = ServicePorts(
            counter=counter,
            summarizer=self.summarizer,
            writer=self.writer,
            redactor=self.redactor,
            metrics=self.metrics,
            hooks=hooks,
            context_provider=context_provider,
            chat_model=chat_model,
            model_windows=self.model_windows,
            model_capabilities=self.model_capabilities,
            max_message_bytes=max_message_bytes,
        )
        recorders = (self.recorder, *([self.snapshots.recorder] if self.snapshots else []))
        self.uow = UnitOfWork(self.loader, self.save, self.events, self.locks, None, recorders)
        self.compactor = Compactor(self.uow, self.ports)
        self.background = BackgroundCompactions(
            self.uow, self.ports, self.compactor, automatic=background
        )
        self.appender = Appender(self.uow, self.ports, self.background)
        self.preparer = Preparer(self.uow, self.ports, self.compactor, self.appender)
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
        """Waits for background compactions, then closes the store."""
        self.background.shutdown()
        super().close()

    def request_compaction(self, session_id: UUID | str, reason: str = "requested") -> None:
        """Asks for a compaction mid-turn; it runs at the first request of the next turn."""
        session_id = as_session_id(session_id)

        def command() -> None:
            session = self.uow.load(session_id)
            session.request_compaction(reason)
            self.uow.save(session)

        self.uow.run(session_id, command)

    def complete(
        self,
        session_id: UUID | str,
        *,
        thinking: Mapping[str, JSON] | None = None,
        tool_choice: Mapping[str, JSON] | None = None,
        temperature: float | None = None,
        metadata: Mapping[str, JSON] | None = None,
        stop_sequences: Sequence[str] = (),
        on_text: TextCallback | None = None,
        on_notice: NoticeCallback | None = None,
    ) -> ModelReply:
        """Prepares the request, sends it through the chat model and records the reply.

        `thinking`, `tool_choice`, `temperature`, `metadata` (the API's, e.g. `user_id`) and
        `stop_sequences` go into the request as the Messages API spells them
        (`InvalidRequestOptionsError`, before anything is sent, for values it would refuse);
        `on_text` receives the reply's text as it streams, `on_notice` the context notices.

        Near the limit the provider counts the request first (when counting fails, the request
        goes as estimated). When the provider answers that the prompt is too long, the session
        is compacted (trigger `overflow`) and the request sent once more. Every reply the
        provider returns is recorded, even one cut short or empty; a reply no session can keep
        raises `ProviderError` with the reply as its `reply`."""
        if self.chat_model is None:
            raise SessionError("this service has no chat model: pass chat_model= to Sessions")
        session_id = as_session_id(session_id)
        options = RequestOptions(
            thinking=thinking,
            tool_choice=tool_choice,
            temperature=temperature,
            metadata=metadata,
            stop_sequences=stop_sequences,  # a string is refused by the converter
        )
        chat = self.chat_model
        prepared = self.prepare_request(session_id, on_notice=on_notice)
        options.check_for(prepared.max_tokens)
        if prepared.needs_count:
            try:
                counted = chat.count_tokens(prepared.context, model=prepared.model)
            except PromptTooLongError:
                raise
            except ProviderError as error:
                # Counting is a precaution: an outage of it must not block the request, and
                # an overflow is still caught by the provider's answer below.
                logger.warning("count_tokens failed; sending as estimated: %s", error)
            else:
                prepared = self.check_count(session_id, counted, on_notice=on_notice) or prepared

        def send(prepared: PreparedRequest) -> ModelReply:
            return chat.send(
                prepared.context,
                model=prepared.model,
                max_tokens=prepared.max_tokens,
                options=options,
                on_text=on_text,
            )

        try:
            reply = send(prepared)
        except PromptTooLongError as error:
            prepared = self.report_overflow(session_id, error, on_notice=on_notice)
            try:
                reply = send(prepared)
            except PromptTooLongError as again:
                raise still_too_long(again, prepared) from again
        try:
            self.record_reply(
                session_id,
                reply.message,
                reply.usage,
                request_estimate=prepared.context.raw_estimate,
            )
        except InvalidMessageError as error:
            failure = ProviderError(f"the model's reply cannot join the session: {error}")
            failure.reply = reply  # type: ignore[attr-defined]  # paid for: the caller keeps it
            raise failure from error
        return reply

    # Queries.

    def session(self, session_id: UUID | str, version: int | None = None) -> Session:
        """The session as it is now (or as it was at `version`): a copy of its own.

        Raises `UnknownSessionError`, or `SessionDeletedError` (a subclass) for a deleted
        session's current state; its earlier versions stay readable, for audits."""
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
