"""`Sessions`: the application service a host app embeds.

Each public method is one command or query: load the session, decide (pure domain policy),
act through the ports, save every new event in one transaction. A command that fails raises
a typed error and saves nothing it should not.

Why this module is long: `Sessions` is the one object a host holds, so every public command
and query is a method here; the preparation of a request (`_prepare`), the send loop of
`complete` and the counting of an appended message are still written here too. What else is
not orchestration lives in collaborators: `compactor` (carrying out prunes, downgrades and
compactions), `summaries` (writing a summary), `lifecycle` (reconfigure, clear, resume),
`overflow`, `management`, `notices`, `loading`, `snapshots`, `background`, `locks`, `guard`,
`inspection`.
"""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any, TypeVar, cast
from uuid import UUID, uuid4

import attrs
from eventsourcing.application import (
    Application,
    ProcessingEvent,
    ProjectorFunction,
    Repository,
    project_aggregate,
)
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import (
    IntegrityError,
    JSONTranscoder,
    Mapper,
    PersistenceError,
    Recording,
)

from abridged.application import lifecycle
from abridged.application.chain import ChainingMapper, correlation
from abridged.application.compactor import Compactor
from abridged.application.completion import completion, driven
from abridged.application.guard import GuardedSummarizer
from abridged.application.inputs import as_message, as_usage, reply_usage
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
from abridged.application.notices import (
    ContextStatus,
    Notice,
    NoticeCallback,
    TokenBreakdown,
    breakdown_of,
    context_status,
)
from abridged.application.options import SessionsOptions, options_of
from abridged.application.overflow import overflow_figures
from abridged.application.ports import (
    ERASED_MARK,
    ChatModel,
    CompactionReport,
    MetricNames,
    Metrics,
    Redactor,
    Summarizer,
    TokenCounter,
)
from abridged.application.snapshots import (
    SessionRepository,
    SessionSnapshot,
    register_snapshot_transcodings,
    snapshot_due,
)
from abridged.application.summaries import SummaryWriter
from abridged.application.topics import TrustedTopicsMapper, register_legacy_topics
from abridged.application.transcodings import register_transcodings
from abridged.domain import planner
from abridged.domain.capabilities import (
    ModelCapabilities,
    capabilities_for,
)
from abridged.domain.context import (
    Context,
    SummaryChunk,
    build_context,
)
from abridged.domain.degradation import (
    check_room,
    message_cap,
    plan_reshowing,
)
from abridged.domain.errors import (
    ConcurrentWriteError,
    ContextOverflowError,
    ContextTooSmallError,
    InvalidArgumentError,
    NotAnOverflowError,
    NothingToCompactError,
    RoleOrderError,
    SessionDeletedError,
    SessionErasedError,
    SessionError,
    SessionExistsError,
    StoreError,
    UnknownSessionError,
)
from abridged.domain.events import held_ledgers
from abridged.domain.inputs import (
    check_message_size,
    check_token_count,
    check_tool_definitions,
    encoded_size,
)
from abridged.domain.messages import JSON, Message, Role
from abridged.domain.metadata import checked_metadata, checked_tags
from abridged.domain.planner import Decision
from abridged.domain.pruning import PrunePlan
from abridged.domain.replies import hidden_blocks
from abridged.domain.session import Session
from abridged.domain.settings import (
    CompactionSettings,
    Limits,
    context_window_for,
    parse_model_windows,
)
from abridged.domain.tokens import (
    block_tokens,
    system_tokens,
    text_block_tokens,
    tools_tokens,
)
from abridged.domain.usage import Usage
from abridged.domain.vocabulary import SessionOrigin, Trigger

__all__ = ["CompactionReport", "PreparedRequest", "Sessions"]

# The library logs through the standard `logging` module only; `abridged/__init__.py` adds a
# NullHandler, so nothing is printed unless the host configures logging.
logger = logging.getLogger(__name__)

T = TypeVar("T")

CONFLICT_RETRIES = 8
CONFLICT_PAUSE = 0.005
"""Seconds: the longest pause before the first retry after a conflict; it doubles per try."""
COUNT_TOKENS_SHARE = 0.9
"""Above this share of the budget, `complete` asks the provider to count before sending."""


class _CompactionDueError(Exception):
    """A request needs a compaction: run again holding the session's compaction lock."""


@attrs.frozen
class PreparedRequest:
    """The context of the next request, and what it took to make it fit."""

    session_id: UUID
    model: str
    max_tokens: int
    context: Context
    compaction: CompactionReport | None
    compactions_so_far: int
    pruned_outputs: int = 0
    suppressed: str | None = None
    context_status: ContextStatus = "full"
    """`summarized` when older messages are stood for by summary chunks, else `full`."""
    notices: tuple[Notice, ...] = ()
    """What happened to the context while this request was prepared, in order."""
    breakdown: TokenBreakdown | None = None
    """Where the request's tokens go: system, tools, summary, kept messages, per-turn."""

    @property
    def needs_count(self) -> bool:
        """Whether the estimate is close enough to the budget that the provider should count
        the request before it is sent (see `Sessions.check_count`)."""
        return self.context.estimate >= COUNT_TOKENS_SHARE * self.context.budget


class SessionMapper(TrustedTopicsMapper, ChainingMapper):
    """The store's mapper: only abridged's own event classes are resolved, and each stored
    event chains a hash to its session's previous one."""


class Sessions(Application[UUID]):
    """Event-sourced conversation sessions that always yield a valid, in-budget request."""

    name = "Sessions"
    # Chosen by measurement (docs/performance.md): every 50 events keeps the cold loads of a
    # compacting session short; past 1,000 retained messages the interval grows with the tail
    # (`snapshot_interval`), since a snapshot costs in proportion to it.
    snapshotting_intervals = {Session: 50}  # noqa: RUF012 (the library reads a class dict)

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
        from abridged.application.background import BackgroundCompactions

        self.options = options = options_of("Sessions", options, keywords)
        self.counter = counter
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
        self.command_locks = CommandLocks()
        self.compactor = Compactor(self)
        self.background = BackgroundCompactions(self, automatic=options.background)
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

    def capabilities(self, model: str) -> ModelCapabilities:
        """What `model` checks and accepts: the host's rows, then the built-in table
        (`abridged.domain.capabilities.capabilities_for`)."""
        return capabilities_for(model, self.model_capabilities)

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        super().register_transcodings(transcoder)
        register_transcodings(transcoder)
        register_snapshot_transcodings(transcoder)

    def construct_mapper(self) -> Mapper[UUID]:
        # Each stored event carries a hash chained to its session's previous event, and the
        # host's correlation id (`abridged.application.chain`); only abridged's own event
        # classes are resolved, since a store's topics decide which modules resolving them
        # imports (`abridged.application.topics.TrustedTopicsMapper`).
        mapper = self.factory.mapper(
            transcoder=self.construct_transcoder(), mapper_class=SessionMapper
        )
        cast(ChainingMapper, mapper).previous = self._stored_hash
        return mapper

    def _stored_hash(self, session_id: UUID, version: int) -> str | None:
        rows = self.recorder.select_events(session_id, gt=version - 1, lte=version)
        return cast(ChainingMapper, self.mapper).stored_hash(rows[0]) if rows else None

    def _record(self, processing_event: ProcessingEvent[UUID]) -> list[Recording[UUID]]:
        mapper = cast(ChainingMapper, self.mapper)
        try:
            recordings = super()._record(processing_event)
        except BaseException:
            mapper.discarded()
            raise
        mapper.committed()
        return recordings

    def correlation(self, correlation_id: str | None) -> AbstractContextManager[None]:
        """`with sessions.correlation("req-42"): ...`: every event the block's commands
        store records the host's correlation id (a request or trace id, at most 256
        printable characters), shown by `history` and `audit`; raises
        `InvalidArgumentError` for a blank or over-long id."""
        return correlation(correlation_id)

    def construct_repository(self) -> Repository[UUID]:
        # eventsourcing's repository, configured from the environment as usual, reading the
        # messages a snapshot points at (`abridged.application.snapshots`).
        repository = super().construct_repository()
        repository.__class__ = SessionRepository
        cast(SessionRepository, repository).service = self
        return repository

    def take_snapshot(
        self,
        aggregate_id: UUID,
        version: int | None = None,
        projector_func: ProjectorFunction[Any, Any] = project_aggregate,
    ) -> None:
        """Snapshots the session at `version` (the latest by default); the snapshot points
        at the events that hold the retained messages instead of copying them."""
        if self.snapshots is None:  # pragma: no cover - snapshotting is always on
            raise SessionError("this service stores no snapshots")
        session = self.repository.get(aggregate_id, version=version, projector_func=projector_func)
        self.snapshots.put([SessionSnapshot.take(session)])

    def _take_snapshots(self, processing_event: ProcessingEvent[UUID]) -> None:
        # eventsourcing re-reads the session from the store to snapshot it; the session just
        # saved is that state already, so it is snapshotted as it is, at its new version.
        interval = self.snapshotting_intervals.get(Session)
        if self.snapshots is None or not interval:
            return
        # The interval grows with the retained tail (`snapshot_interval`): a snapshot costs in
        # proportion to it. An event whose replay would read every retained body is
        # snapshotted at once, so cold loads read none (`snapshot_due`).
        for session_id, session in processing_event.aggregates.items():
            if not isinstance(session, Session):
                continue
            if snapshot_due(session_id, processing_event.events, interval, len(session.entries)):
                self.snapshots.put([SessionSnapshot.take(session)])

    # Commands.

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
    ) -> UUID:
        """Starts a session and returns its id; raises `InvalidSettingsError` for bad limits.

        `context_window` defaults to the model's, from `abridged.domain.settings.MODEL_WINDOWS`
        and the service's `model_windows`.
        Raises `ContextTooSmallError` when the system prompt and tools leave no room for a
        request in the window. `metadata` (string keys and values) and `tags` are recorded
        with the start and filter `list_sessions`; `InvalidMetadataError` when they are not
        short strings.

        When the chat model adds the provider's own context management to requests, a
        `DoubleCompactionConfigured` warning is recorded with the start."""
        session = self._new_session(
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
        self._save_new(session)
        return session.id

    def _new_session(
        self,
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
        settings = settings or CompactionSettings()
        _check_arguments(model, max_output_tokens, context_window, system)
        check_tool_definitions(tools)
        context_window = context_window_for(model, context_window, self.model_windows)
        limits = Limits(context_window, max_output_tokens, settings)  # validates first
        checked = checked_metadata(metadata)
        tag_tuple = checked_tags(tags)
        tool_list = tuple(dict(t) for t in tools)
        counted_system = system_tokens(system, self.counter.count)
        counted_tools = tools_tokens(tool_list, self.counter.count)
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
            token_counter=self.counter.name,
            metadata=checked,
            tags=tag_tuple,
            parent_id=parent_id,
            origin=origin,
            parent_summary=parent_summary,
            thinking_bound=self.capabilities(model).prefix_bound_thinking,
        )
        management = self.chat_model.context_management if self.chat_model else None
        if management:
            session.warn_double_compaction(
                self.chat_model.name if self.chat_model else "provider",
                f"the provider's context management is configured too: {dict(management)}; "
                "both may compact the same conversation",
            )
            logger.warning("session %s: double compaction configured", session.id)
        return session

    def _save_new(self, session: Session) -> None:
        try:
            with _store_errors():
                self.save(session)
        except IntegrityError as error:
            _check_erased(self, session.id, error)
            raise SessionExistsError(
                f"a session with id {session.id} exists already; nothing was saved"
            ) from error

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
        return self._append(
            as_session_id(session_id), as_message(message), usage=None, request_estimate=None
        )

    def record_reply(
        self,
        session_id: UUID | str,
        message: Message | Mapping[str, JSON] | Any,
        usage: Usage | Mapping[str, JSON] | Any | None = None,
        request_estimate: int | None = None,
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
        """
        parsed = as_message(message)
        if parsed.role is not Role.ASSISTANT:
            raise RoleOrderError("a model reply is an assistant message")
        counted = as_usage(usage) if usage is not None else reply_usage(message)
        if request_estimate is not None:
            check_token_count(request_estimate, "request_estimate", zero=False)
        return self._append(
            as_session_id(session_id),
            parsed,
            usage=counted,
            request_estimate=request_estimate,
            reply=True,
        )

    def prepare_request(
        self, session_id: UUID | str, *, on_notice: NoticeCallback | None = None
    ) -> PreparedRequest:
        """The context for the next model call: old tool outputs pruned and the session
        compacted first when its threshold is hit (or a compaction was requested).

        The result says whether the context is `full` or `summarized` and carries notices
        (pruned, compaction started / completed / failed / suppressed); `on_notice` is called
        with each as it happens, so a UI can show "compacting…" while the summary is written.

        Raises `ContextOverflowError` when no compaction can make it fit; nothing is saved.
        When a compaction is due, one runs at a time per session: concurrent requests wait
        for it (a background one included) and use its result.
        """
        session_id = as_session_id(session_id)
        try:
            return self._retrying(
                session_id, lambda: self._prepare(session_id, on_notice=on_notice, locked=False)
            )
        except _CompactionDueError:
            with self.compaction_lock(session_id):
                return self._retrying(
                    session_id,
                    lambda: self._prepare(session_id, on_notice=on_notice, locked=True),
                )

    def report_overflow(
        self,
        session_id: UUID | str,
        error_or_limit: Exception | int | None = None,
        *,
        tokens: int | None = None,
        on_notice: NoticeCallback | None = None,
    ) -> PreparedRequest:
        """Recovers from the provider's "prompt is too long" on a request the host sent
        itself: records the provider's count (recalibrating the estimate, and adopting a
        smaller window the provider enforces), compacts (trigger `overflow`) and returns the
        request to send instead.

        `error_or_limit` is the provider's error (`PromptTooLongError`, or the SDK's own
        exception when the service reads that provider's errors: `bootstrap` wires the
        Anthropic SDK's `BadRequestError`), or the provider's maximum as a number; `tokens`
        is the provider's count of the rejected request, when known.

        Raises `NotAnOverflowError` (nothing recorded) for an error that is not an overflow,
        and `ContextOverflowError` when even the smallest request cannot fit.
        """
        session_id = as_session_id(session_id)
        tokens, maximum = overflow_figures(error_or_limit, tokens, self.read_provider_error)
        self.session(session_id)  # an unknown or deleted session records nothing
        self.metrics.add(MetricNames.OVERFLOWS, attributes={"source": "provider"})
        return self._after_overflow(session_id, tokens, maximum, on_notice)

    def check_count(
        self,
        session_id: UUID | str,
        counted: int,
        *,
        on_notice: NoticeCallback | None = None,
    ) -> PreparedRequest | None:
        """Compares the provider's count of a prepared request (its count-tokens endpoint)
        with the budget. Over the budget, the estimate is recalibrated, the session
        compacted (trigger `overflow`, the window kept) and the request to send instead is
        returned; within it, `None`: send the request as prepared.

        Worth calling when `PreparedRequest.needs_count` is true: near the limit, where an
        estimate's small error decides whether the provider accepts the request."""
        if isinstance(counted, bool) or not isinstance(counted, int) or counted <= 0:
            raise NotAnOverflowError(f"a provider count is a positive number, got {counted!r}")
        session_id = as_session_id(session_id)
        session = self.session(session_id)
        if counted <= session.limits.budget:
            return None
        self.metrics.add(MetricNames.OVERFLOWS, attributes={"source": "count"})
        # Our own budget, not a provider maximum: recalibrate, keep the window.
        return self._after_overflow(session_id, counted, None, on_notice)

    def append_and_prepare(
        self,
        session_id: UUID | str,
        message: Message | Mapping[str, JSON] | Any,
        *,
        on_notice: NoticeCallback | None = None,
    ) -> PreparedRequest:
        """`append_message` then `prepare_request`, with one load and one transaction.

        The user's message and whatever the prepare records (a prune, a compaction) are saved
        together, so a host's turn costs one write instead of two. Errors are those of the two
        methods: an invalid message raises and saves nothing; when the request cannot fit
        (`ContextOverflowError`), the message is appended all the same, as it would be by the
        two calls, and the error raised.
        """
        session_id = as_session_id(session_id)
        parsed = as_message(message)
        if parsed.role is Role.ASSISTANT:
            raise RoleOrderError("the next request needs a user (or system) message last")
        check_message_size(parsed, self.max_message_bytes)
        counted = self._counted_once(parsed)

        def command() -> PreparedRequest:
            session = self._load(session_id)
            session.check_append(parsed)
            self._append_counted(session, parsed, counted(), None, None, save=False)
            return self._prepare(session_id, session, on_notice, locked=False)

        try:
            return self._retrying(session_id, command)
        except ContextTooSmallError:
            raise  # the message itself can never be sent: nothing is written
        except _CompactionDueError:
            # A compaction runs one at a time, holding the session's lock: the message is
            # saved on its own, and the request waits its turn (two writes, at compactions).
            self.append_message(session_id, parsed)
            return self.prepare_request(session_id)
        except ContextOverflowError:
            self.append_message(session_id, parsed)
            raise

    def compact(self, session_id: UUID | str, instructions: str | None = None) -> CompactionReport:
        """Compacts now (`/compact`), whatever the threshold; `instructions` reach the
        summarizer as its focus.

        Fails loudly: `NothingToCompactError` when nothing can be summarized, and
        `CompactionFailedError` when the summarizer fails (the failure is recorded)."""
        session_id = as_session_id(session_id)
        with self.compaction_lock(session_id):
            return self._retrying(session_id, lambda: self._manual(session_id, instructions))

    def compact_soon(self, session_id: UUID | str) -> Future[CompactionReport | None]:
        """Starts a compaction off the user's turn, on a worker thread, when the session is
        past its `background_threshold_ratio` (or its threshold) and not already compacting.

        The summary is written while the conversation goes on, and applied only if what it
        covers is unchanged (otherwise `CompactionDiscarded` says why); messages appended
        meanwhile stay in the tail. The future's result is the report, or `None` when no
        compaction was due."""
        return self.background.schedule(as_session_id(session_id))

    reconfigure = lifecycle.reconfigure

    def clear_session(self, session_id: UUID | str, *, instructions: str | None = None) -> UUID:
        """Starts a fresh session that continues `session_id` (its parent) from the parent's
        summary, with the parent's model, prompt, tools and settings; returns its id.

        The parent is left as it is. Raises `CompactionFailedError` when the summary cannot
        be written (nothing is saved)."""
        return lifecycle.continue_session(
            self, as_session_id(session_id), "clear", instructions=instructions
        )

    def resume_session(self, session_id: UUID | str, /, **changes: object) -> UUID:
        """Starts a session that resumes `session_id`: the whole conversation, copied, when it
        fits below the new session's threshold, else the parent's summary; returns its id.

        `changes` are `start_session` keywords (`model`, `context_window`,
        `max_output_tokens`, `system`, `tools`, `settings`) that differ from the parent's."""
        return lifecycle.continue_session(
            self, as_session_id(session_id), "resume", changes=changes
        )

    @contextmanager
    def compaction_lock(self, session_id: UUID | str) -> Iterator[None]:
        """Holds the session's compaction lock: no other compaction of it runs meanwhile."""
        held = self.locks.acquire(as_session_id(session_id))
        try:
            yield
        finally:
            held.release()

    def close(self) -> None:
        """Waits for background compactions, then closes the store."""
        self.background.shutdown()
        super().close()

    def request_compaction(self, session_id: UUID | str, reason: str = "requested") -> None:
        """Asks for a compaction mid-turn; it runs at the first request of the next turn."""
        session_id = as_session_id(session_id)

        def command() -> None:
            session = self._load(session_id)
            session.request_compaction(reason)
            self.save(session)

        self._retrying(session_id, command)

    complete = driven(completion)
    """Prepares the request, sends it through the chat model and records the reply: the
    loop of `abridged.application.completion.completion`, whose docstring says what it
    takes and decides (`AsyncSessions.complete` runs the very same loop, awaited)."""

    # Queries.

    def session(self, session_id: UUID | str, version: int | None = None) -> Session:
        """The session as it is now (or as it was at `version`): a copy of its own.

        Raises `UnknownSessionError`, or `SessionDeletedError` (a subclass) for a deleted
        session's current state; its earlier versions stay readable, for audits."""
        session_id = as_session_id(session_id)
        with _store_errors():
            session = self.loader.for_query(session_id, version)
        if session.deleted is not None:
            raise SessionDeletedError(f"session {session_id} was deleted: {session.deleted}")
        return session

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

    def delete_session(
        self,
        session_id: UUID | str,
        reason: str = "deleted",
        *,
        erase: bool = False,
        cascade: bool = True,
    ) -> tuple[UUID, ...]:
        """Deletes the session: a `Deleted` event is recorded, after which every command and
        `session()` raise `SessionDeletedError` and `list_sessions` skips it. Its events stay
        in the store (`history` still reads them). Returns the ids deleted.

        With `erase`, the session's stored events and snapshots are removed from the store
        instead (SQLite and PostgreSQL; a session already deleted may be erased later), under
        the session's command and compaction locks, and the store refuses any later write of
        it (`SessionErasedError` for a command that loaded it before). With `cascade` (the
        default) the sessions `clear_session` / `resume_session` started from it, which hold
        copies of its content, are erased too (`derived_sessions` lists them first). On a
        store that cannot erase, `SessionError` and nothing changes. See docs/security.md,
        "Erasure"."""
        session_id = as_session_id(session_id)
        if not isinstance(reason, str) or not reason.strip():
            raise SessionError("a deletion needs a reason (a non-blank string)")
        if erase:
            return self._erase(session_id, reason, cascade=cascade)

        def command() -> None:
            session = self._load(session_id)
            session.delete(reason)
            self.save(session)

        self._retrying(session_id, command)
        logger.info("session %s deleted: %s", session_id, reason)
        return (session_id,)

    def derived_sessions(self, session_id: UUID | str) -> tuple[UUID, ...]:
        """The sessions started from this one by `clear_session` / `resume_session`, and
        from those in turn, oldest first: each holds a copy of some of its content."""
        return derived_sessions(self, as_session_id(session_id))

    def _erase(self, session_id: UUID, reason: str, *, cascade: bool) -> tuple[UUID, ...]:
        if self.erase_events is None:
            raise SessionError("this service cannot erase events: pass erase_events=")
        self.history(session_id)  # an unknown id is an error; a deleted session may be erased
        recorders: list[object] = [self.recorder]
        if self.snapshots is not None:
            recorders.append(self.snapshots.recorder)
        targets = (*(self.derived_sessions(session_id) if cascade else ()), session_id)
        for target in targets:
            # A compaction of it (this process's, or on PostgreSQL any process's) finishes
            # first, and no command of this process is between its load and its save; a
            # command that saves after this is refused by the store's tombstone.
            with self.compaction_lock(target), self.command_locks.held(target):
                rows = self.erase_events(recorders, target)
                self.loader.evict(target)  # a cached copy would outlive its events
            logger.info("session %s erased (%d stored rows): %s", target, rows, reason)
        return targets

    def history(self, session_id: UUID | str) -> list[Aggregate.Event]:
        """Every event of the session, oldest first: the audit trail."""
        session_id = as_session_id(session_id)
        with _store_errors():
            events = cast(list[Aggregate.Event], list(self.events.get(session_id)))
        if not events:
            raise UnknownSessionError(f"no session with id {session_id}")
        held_ledgers(events)  # a ledger update records what changed: each gets its ledger
        return events

    # Internals.

    def _load(self, session_id: UUID) -> Session:
        # The cached session itself, for a command run by `_retrying` (see `SessionLoader`).
        session = self.loader.for_command(session_id)
        if session.deleted is not None:
            raise SessionDeletedError(f"session {session_id} was deleted: {session.deleted}")
        return session

    def _append(
        self,
        session_id: UUID,
        message: Message | Mapping[str, JSON],
        usage: Usage | None,
        request_estimate: int | None,
        reply: bool = False,
    ) -> int:
        parsed = as_message(message)
        # Size and encodability first: both bound what the checks after them cost.
        check_message_size(parsed, self.max_message_bytes)
        counted = self._counted_once(parsed, hidden_blocks(parsed) if reply else frozenset())

        def command() -> int:
            session = self._load(session_id)
            # A typed error for bad input before anything is tokenized; the aggregate checks
            # again before its event exists, and again on a retry after a concurrent write.
            session.check_append(parsed, reply=reply)
            return self._append_counted(
                session, parsed, counted(), usage, request_estimate, reply=reply
            )

        return self._retrying(session_id, command)

    def _counted_once(
        self, message: Message, hidden: frozenset[int] = frozenset()
    ) -> Callable[[], tuple[int, ...]]:
        """The message's block counts, computed at the first call only: a command that runs
        again after a concurrent write does not tokenize again. The first call comes after
        the message's checks, so bad input fails before anything is counted. `hidden`
        blocks (of an incomplete reply, never shown) count 0."""
        return functools.cache(
            lambda: tuple(
                0 if index in hidden else block_tokens(b, self.counter.count)
                for index, b in enumerate(message.content)
            )
        )

    def _append_counted(
        self,
        session: Session,
        message: Message,
        counts: tuple[int, ...],
        usage: Usage | None,
        request_estimate: int | None,
        *,
        save: bool = True,
        reply: bool = False,
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

    def _extra(self, session: Session) -> tuple[str | None, int]:
        if self.context_provider is None:
            return None, 0
        if session.thinking_bound:
            # Content shown with one request and gone from the next would change the prefix
            # of the reply's thinking, which such a model then refuses.
            logger.warning(
                "session %s: per-turn content is not sent to %s, which binds thinking to its "
                "prefix; append it to the conversation as a message instead",
                session.id,
                session.model,
            )
            return None, 0
        text = self.context_provider.content(session.id)
        if not text or not text.strip():
            return None, 0
        return text, text_block_tokens(text, self.counter.count)

    def _prepare(
        self,
        session_id: UUID,
        loaded: Session | None = None,
        on_notice: NoticeCallback | None = None,
        *,
        locked: bool = True,
    ) -> PreparedRequest:
        session = loaded or self._load(session_id)
        if not session.awaiting_reply:
            raise RoleOrderError(
                "the next request needs a user message last (a prompt or tool results)"
            )
        notes: list[Notice] = []
        # A pass that may stop to wait for the compaction lock tells the caller nothing until
        # it is sure to finish: the pass that runs after the wait tells it all.
        emit = self._emitter(notes, on_notice if locked else None)
        extra_text, extra_tokens = self._extra(session)

        plan = planner.plan_prune(session, extra_tokens)
        deferred = planner.defer_to_compaction(plan)
        pruned = 0 if deferred else self._prune(session, plan, extra_tokens, emit)
        requested = session.compaction_requested and session.turn_ended
        trigger: Trigger = "requested" if requested else "threshold"
        try:
            decision = planner.decide(session, trigger, extra_tokens)
        except ContextOverflowError as error:
            decision, more = self._decide_to_fit(
                session, trigger, plan if deferred else None, extra_tokens, emit, error
            )
            pruned += more
            deferred = False
        report = None
        suppressed = None
        if decision is not None:
            suppressed = planner.suppression(session, decision)
            if suppressed:
                if session.suppressed != suppressed:
                    self.metrics.add(
                        MetricNames.SUPPRESSIONS, attributes={"trigger": decision.trigger}
                    )
                    emit(
                        Notice(
                            "compaction_suppressed",
                            f"compaction held back: {suppressed}",
                            decision.estimate,
                        )
                    )
                session.suppress(decision.trigger, suppressed, decision.estimate)
            elif not locked:
                raise _CompactionDueError
            else:
                report = self.compactor.compact(session, decision, None, loud=False, emit=emit)
        if report is not None:
            pruned += report.outputs_pruned
        elif deferred:
            # No compaction after all (held back, or cancelled by a hook): the prune runs alone.
            plan = planner.plan_prune(session, extra_tokens)
            pruned = self._prune(session, plan, extra_tokens, emit)
        self.compactor.downgrade_reasoning(session, pruned > 0 or report is not None)
        if session.pending_events:
            self.save(session)
        if report is not None and self.hooks is not None:
            self.hooks.after_compaction(session_id, report)
        if not locked and on_notice is not None:
            for notice in notes:
                on_notice(notice)
        context = build_context(
            session, extra_text, extra_tokens, capabilities=self.capabilities(session.model)
        )
        if context.estimate > context.budget:  # pragma: no cover - decide() guarantees the fit
            raise ContextOverflowError(
                f"the request needs {context.estimate} tokens, over the budget of {context.budget}",
                position=None,
                tokens=context.estimate,
                budget=context.budget,
            )
        return PreparedRequest(
            session_id=session_id,
            model=session.model,
            max_tokens=session.reserved_output,
            context=context,
            compaction=report,
            compactions_so_far=session.generation,
            pruned_outputs=pruned,
            suppressed=suppressed,
            context_status=context_status(session),
            notices=tuple(notes),
            breakdown=breakdown_of(session, extra_tokens),
        )

    def _decide_to_fit(
        self,
        session: Session,
        trigger: Trigger,
        deferred: PrunePlan | None,
        extra_tokens: int,
        emit: Callable[[Notice], None],
        overflow: ContextOverflowError,
    ) -> tuple[Decision | None, int]:
        """The decision when no tail fits as the session stands (`overflow`): with the prune
        put off for the compaction run first (nothing to cut, or no tail that fits with its
        outputs whole), then, as the last resort, every output before the last exchange shown
        by name (`planner.plan_fit`). Raises `overflow`'s kind when even that does not fit;
        what was recorded is then not saved. Returns the decision and the outputs pruned."""
        # Messages shown for a larger window (before a reconfigure, or before the provider's
        # smaller one was learned) are reduced to the window's cap first.
        if self._reshow_for_window(session, "the window is smaller than when it was shown"):
            with suppress(ContextOverflowError):
                return planner.decide(session, trigger, extra_tokens), 0
        pruned = self._prune(session, deferred, extra_tokens, emit)
        if deferred is not None:
            with suppress(ContextOverflowError):
                return planner.decide(session, trigger, extra_tokens), pruned
        fit = planner.plan_fit(session)
        if fit is None:
            raise overflow
        pruned += self._prune(session, fit, extra_tokens, emit)
        return planner.decide(session, trigger, extra_tokens), pruned

    def _reshow_for_window(self, session: Session, reason: str) -> bool:
        """Reduces the retained messages shown over the cap of the session's current window
        (`degradation.plan_reshowing`); whether any was."""
        cap = message_cap(
            session.limits, session.system_tokens, session.tools_tokens, session.calibration
        )
        reshown = plan_reshowing(session.entries, cap, self.counter.count)
        session.reshow(reshown, cap, reason)
        return bool(reshown)

    def _prune(
        self,
        session: Session,
        plan: PrunePlan | None,
        extra_tokens: int,
        emit: Callable[[Notice], None],
    ) -> int:
        """Runs `plan` (when there is one) and tells the caller; how many outputs it pruned."""
        if plan is None:
            return 0
        before = session.estimate()
        pruned = self.compactor.prune(session, plan)
        if pruned:
            emit(
                Notice(
                    "pruned",
                    f"{pruned} older tool output(s) are shown shortened from now on",
                    before,
                    session.estimate(),
                    breakdown_of(session, extra_tokens),
                )
            )
        return pruned

    @staticmethod
    def _emitter(notes: list[Notice], on_notice: NoticeCallback | None) -> Callable[[Notice], None]:
        def emit(notice: Notice) -> None:
            notes.append(notice)
            if on_notice is not None:
                on_notice(notice)

        return emit

    def _manual(self, session_id: UUID, instructions: str | None) -> CompactionReport:
        session = self._load(session_id)
        decision = planner.decide(session, "manual", self._extra(session)[1])
        if decision is None:
            raise NothingToCompactError(
                "nothing can be compacted: only the last exchange is in the context"
            )
        report = self.compactor.compact(session, decision, instructions, loud=True)
        self.compactor.downgrade_reasoning(session, True)
        self.save(session)
        if report is None:
            raise NothingToCompactError("a compaction hook cancelled the compaction")
        if self.hooks is not None:
            self.hooks.after_compaction(session_id, report)
        return report

    def _after_overflow(
        self,
        session_id: UUID,
        tokens: int | None,
        maximum: int | None,
        on_notice: NoticeCallback | None = None,
    ) -> PreparedRequest:
        notes: list[Notice] = []
        emit = self._emitter(notes, on_notice)
        emit(
            Notice(
                "overflow",
                "the request was too long for the model"
                + (f" ({tokens} tokens)" if tokens else "")
                + "; compacting",
                tokens,
            )
        )
        with self.compaction_lock(session_id):
            report = self._retrying(
                session_id,
                lambda: self._compact_after_overflow(session_id, tokens, maximum, emit),
            )
        logger.warning(
            "session %s: provider overflow (%s tokens, maximum %s); compacted",
            session_id,
            tokens,
            maximum,
        )
        if report is not None and self.hooks is not None:
            self.hooks.after_compaction(session_id, report)
        prepared = self.prepare_request(session_id, on_notice=on_notice)
        return attrs.evolve(prepared, notices=(*notes, *prepared.notices))

    def _compact_after_overflow(
        self,
        session_id: UUID,
        tokens: int | None,
        maximum: int | None,
        emit: Callable[[Notice], None] | None = None,
    ) -> CompactionReport | None:
        session = self._load(session_id)
        session.report_overflow(tokens, maximum)
        self._reshow_for_window(session, "the provider enforces a smaller window")
        report = None
        decision = planner.decide(session, "overflow", self._extra(session)[1])
        if decision is not None:
            report = self.compactor.compact(session, decision, None, loud=False, emit=emit)
            self.compactor.downgrade_reasoning(session, True)
        self.save(session)
        return report

    def _retrying(self, session_id: UUID, command: Callable[[], T]) -> T:
        """Runs a command on the session holding its command lock, and again on another
        process's conflicting write, re-reading the session after a short random pause."""
        for attempt in range(CONFLICT_RETRIES):
            try:
                # A failed attempt leaves nothing unsaved in the cache (see `SessionLoader`).
                with self.command_locks.held(session_id):
                    return self.loader.run(command)
            except IntegrityError as error:
                _check_erased(self, session_id, error)
                if attempt == CONFLICT_RETRIES - 1:
                    raise ConcurrentWriteError(
                        f"the session kept changing under this command ({CONFLICT_RETRIES} "
                        "tries); nothing of it was saved"
                    ) from error
                logger.info("concurrent write; retrying (attempt %d)", attempt + 1)
                # Writers that collided and retry at once collide again: spread them out.
                time.sleep(random.uniform(0, CONFLICT_PAUSE * 2**attempt))
            except PersistenceError as error:
                raise StoreError(f"the session store failed: {error}") from error
        raise AssertionError("unreachable")  # pragma: no cover


def _check_erased(app: Sessions, session_id: UUID, error: Exception) -> None:
    """Raises `SessionErasedError` when the store refused a write because the session was
    erased (its tombstone), instead of taking it for a concurrent write to retry."""
    if ERASED_MARK in str(error) or ERASED_MARK in str(error.__cause__ or ""):
        app.loader.evict(session_id)
        raise SessionErasedError(
            f"session {session_id} was erased while this command ran; nothing was saved"
        ) from None


@contextmanager
def _store_errors() -> Iterator[None]:
    try:
        yield
    except IntegrityError:
        raise
    except PersistenceError as error:
        raise StoreError(f"the session store failed: {error}") from error


def as_session_id(session_id: UUID | str) -> UUID:
    """A session id from a UUID or its string; raises `UnknownSessionError` for anything else
    (no session can have it)."""
    if isinstance(session_id, UUID):
        return session_id
    if isinstance(session_id, str):
        try:
            return UUID(session_id.strip())
        except ValueError:
            pass
    raise UnknownSessionError(f"no session with id {session_id!r:.80}: not a UUID")


def _new_session_id(session_id: object) -> UUID:
    try:
        return as_session_id(session_id)  # type: ignore[arg-type]
    except UnknownSessionError:
        raise InvalidArgumentError(f"session_id must be a UUID, got {session_id!r:.80}") from None


def _check_arguments(
    model: object, max_output_tokens: object, context_window: object, system: object
) -> None:
    """Typed errors for arguments of the wrong type, before they fail deep inside."""
    if not isinstance(model, str) or not model.strip():
        raise InvalidArgumentError(f"model must be a model name, got {model!r:.80}")
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
    encoded_size(system, "the system prompt")
