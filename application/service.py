"""`Sessions`: the application service a host app embeds.

Each public method is one command or query: load the session, decide (pure domain policy),
act through the ports, save every new event in one transaction. A command that fails raises
a typed error and saves nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar
from uuid import UUID, uuid4

import attrs
import structlog
from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import IntegrityError, JSONTranscoder

from application.ports import Summarizer, SummarizerError, TokenCounter
from application.transcodings import register_transcodings
from domain.errors import ContextOverflowError, RoleOrderError, UnknownSessionError
from domain.messages import JSON, Message, Role
from domain.session import (
    Context,
    Decision,
    Session,
    Usage,
    render_summary,
    summary_block_tokens,
)
from domain.settings import CompactionSettings, Limits
from domain.tokens import MESSAGE_OVERHEAD, block_tokens, system_tokens, tools_tokens
from domain.truncation import plan_truncations, truncate_text

logger = structlog.get_logger(__name__)

T = TypeVar("T")

CONFLICT_RETRIES = 3
MIN_SUMMARY_TOKENS = 16


@attrs.frozen
class CompactionReport:
    """What a compaction did, for the caller's logs and progress output."""

    generation: int
    strategy: str
    retained_from: int
    messages_summarized: int
    tokens_before: int
    tokens_after: int
    turns_kept: int


@attrs.frozen
class PreparedRequest:
    """The context of the next request, and the compaction it took to fit, if any."""

    session_id: UUID
    model: str
    max_tokens: int
    context: Context
    compaction: CompactionReport | None
    compactions_so_far: int


class Sessions(Application[UUID]):
    """Event-sourced conversation sessions that always yield a valid, in-budget request."""

    name = "Sessions"
    snapshotting_intervals = {Session: 100}  # noqa: RUF012 (the library reads a class dict)

    def __init__(
        self,
        *,
        counter: TokenCounter,
        summarizer: Summarizer,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.counter = counter
        self.summarizer = summarizer
        # Recently used sessions stay in memory and are fast-forwarded from the store, so a
        # command decodes only the events it has not seen (set the size to 0 to turn it off).
        super().__init__(env={"AGGREGATE_CACHE_MAXSIZE": "256", **(env or {})})

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        super().register_transcodings(transcoder)
        register_transcodings(transcoder)

    # Commands.

    def start_session(
        self,
        *,
        model: str,
        context_window: int,
        max_output_tokens: int,
        system: str = "",
        tools: Sequence[Mapping[str, JSON]] = (),
        settings: CompactionSettings | None = None,
        session_id: UUID | None = None,
    ) -> UUID:
        """Starts a session and returns its id; raises `InvalidSettingsError` for bad limits."""
        settings = settings or CompactionSettings()
        Limits(context_window, max_output_tokens, settings)  # validates before anything is saved
        tool_list = tuple(dict(t) for t in tools)
        session = Session(  # type: ignore[call-arg]  # `id` is eventsourcing's
            id=session_id or uuid4(),
            model=model,
            context_window=context_window,
            reserved_output=max_output_tokens,
            settings=settings,
            settings_fingerprint=settings.fingerprint,
            system=system,
            tools=tool_list,
            system_tokens=system_tokens(system, self.counter.count),
            tools_tokens=tools_tokens(tool_list, self.counter.count),
            token_counter=self.counter.name,
        )
        self.save(session)
        return session.id

    def append_message(self, session_id: UUID, message: Message | Mapping[str, JSON]) -> int:
        """Appends a user or assistant message; returns its position in the history.

        Raises `InvalidMessageError` (a subclass names the problem) and writes nothing when
        the message would make an invalid request, `UnknownSessionError` for an unknown id.
        """
        return self._append(session_id, message, usage=None)

    def record_reply(
        self,
        session_id: UUID,
        message: Message | Mapping[str, JSON],
        usage: Usage | None = None,
    ) -> int:
        """Appends the model's reply with the usage the provider reported for the request.

        The usage calibrates the session's estimates (reported prompt tokens / estimated).
        """
        parsed = message if isinstance(message, Message) else Message.from_wire(message)
        if parsed.role is not Role.ASSISTANT:
            raise RoleOrderError("a model reply is an assistant message")
        return self._append(session_id, parsed, usage=usage)

    def prepare_request(self, session_id: UUID) -> PreparedRequest:
        """The context for the next model call, compacted first when the threshold is hit.

        Raises `ContextOverflowError` when no compaction can make it fit; nothing is saved.
        """
        return self._retrying(lambda: self._prepare(session_id))

    # Queries.

    def session(self, session_id: UUID, version: int | None = None) -> Session:
        """The session as it is now (or as it was at `version`)."""
        try:
            return self.repository.get(session_id, version=version)
        except AggregateNotFoundError:
            raise UnknownSessionError(f"no session with id {session_id}") from None

    def history(self, session_id: UUID) -> list[DomainEventProtocol[UUID]]:
        """Every event of the session, oldest first: the audit trail."""
        self.session(session_id)
        return list(self.events.get(session_id))

    # Internals.

    def _append(
        self, session_id: UUID, message: Message | Mapping[str, JSON], usage: Usage | None
    ) -> int:
        parsed = message if isinstance(message, Message) else Message.from_wire(message)

        def command() -> int:
            session = self.session(session_id)
            session.check_append(parsed)
            block_counts = [block_tokens(b, self.counter.count) for b in parsed.content]
            tokens = MESSAGE_OVERHEAD + sum(block_counts)
            truncations, shown_tokens = plan_truncations(
                parsed, session.limits.tool_output_tokens, self.counter.count, block_counts
            )
            request_estimate = session.raw_estimate() if usage is not None else None
            session.append(
                parsed,
                tokens=tokens,
                shown_tokens=shown_tokens if truncations else tokens,
                truncations=truncations,
                usage=usage,
                request_estimate=request_estimate,
            )
            self.save(session)
            return session.message_count - 1

        return self._retrying(command)

    def _prepare(self, session_id: UUID) -> PreparedRequest:
        session = self.session(session_id)
        if not session.awaiting_reply:
            raise RoleOrderError(
                "the next request needs a user message last (a prompt or tool results)"
            )
        report = None
        decision = session.decide()
        if decision is not None:
            report = self._compact(session, decision)
            self.save(session)
        context = session.context()
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
        )

    def _compact(self, session: Session, decision: Decision) -> CompactionReport:
        session.hit_threshold(decision)
        generation = session.generation + 1
        first = (
            session.summaries[0].first_position
            if decision.resummarize and session.summaries
            else session.retained_from
        )
        last = decision.retained_from - 1
        framing = summary_block_tokens(self.counter.count(render_summary("", first, last, 0)))
        text_budget = decision.summary_max_tokens - framing
        messages = session.messages_before(decision.retained_from)
        earlier = (
            tuple(Message.user(c.text) for c in session.summaries) if decision.resummarize else ()
        )
        strategy = "resummarize" if decision.resummarize else "additive"
        try:
            if text_budget < MIN_SUMMARY_TOKENS:
                raise SummarizerError(
                    f"only {text_budget} tokens are left for the summary in this window"
                )
            summary = self.summarizer.summarize(
                earlier + messages, max_tokens=text_budget, session_model=session.model
            )
            text, model = summary.text, summary.model
            usage = (summary.input_tokens, summary.output_tokens)
        except SummarizerError as error:
            # Threshold compaction fails open: the session stays usable, and the event says so.
            session.fail_compaction(self.summarizer.name, str(error), fallback="truncate")
            logger.warning(
                "summarizer failed; truncating", session=str(session.id), error=str(error)
            )
            text = (
                f"[{len(messages)} earlier messages were dropped without a summary: "
                f"the summarizer failed ({error}).]"
            )
            if earlier:
                text = "\n\n".join([*(m.text for m in earlier), text])
            model, strategy, usage = "none", "truncate", (0, 0)
        text, tokens = self._fit_summary(text, first, last, generation, decision.summary_max_tokens)
        outcome = session.complete_compaction(
            decision,
            text=text,
            tokens=tokens,
            model=model,
            strategy=strategy,
            summarizer=self.summarizer.name,
            summarizer_input_tokens=usage[0],
            summarizer_output_tokens=usage[1],
        )
        logger.info(
            "compacted",
            session=str(session.id),
            generation=outcome.generation,
            strategy=strategy,
            retained_from=decision.retained_from,
            tokens_before=outcome.tokens_before,
            tokens_after=outcome.tokens_after,
        )
        return CompactionReport(
            generation=outcome.generation,
            strategy=strategy,
            retained_from=decision.retained_from,
            messages_summarized=outcome.messages_summarized,
            tokens_before=outcome.tokens_before,
            tokens_after=outcome.tokens_after,
            turns_kept=decision.turns_kept,
        )

    def _fit_summary(
        self, text: str, first: int, last: int, generation: int, limit: int
    ) -> tuple[str, int]:
        """The summary text, cut at its end until its rendered chunk fits `limit` tokens."""

        def cost(candidate: str) -> int:
            rendered = render_summary(candidate, first, last, generation)
            return summary_block_tokens(self.counter.count(rendered))

        tokens = cost(text)
        while tokens > limit and len(text) > 1:
            keep = max(1, int(len(text) * limit / tokens * 0.9))
            text = truncate_text(text, keep, 0).rstrip() or text[:keep]
            tokens = cost(text)
        return text, tokens

    def _retrying(self, command: Callable[[], T]) -> T:
        """Runs a command again on a concurrent writer's conflict, re-reading the session."""
        for attempt in range(CONFLICT_RETRIES):
            try:
                return command()
            except IntegrityError:
                if attempt == CONFLICT_RETRIES - 1:
                    raise
                logger.info("concurrent write; retrying", attempt=attempt + 1)
        raise AssertionError("unreachable")  # pragma: no cover


def as_usage(data: Mapping[str, Any] | None) -> Usage | None:
    """Provider usage from the Messages API's `usage` object (unknown keys ignored)."""
    if not data:
        return None
    return Usage(
        input_tokens=int(data.get("input_tokens") or 0),
        output_tokens=int(data.get("output_tokens") or 0),
        cache_read_input_tokens=int(data.get("cache_read_input_tokens") or 0),
        cache_creation_input_tokens=int(data.get("cache_creation_input_tokens") or 0),
    )
