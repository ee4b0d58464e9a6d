"""Ports: what the application needs from the outside world.

The three ports a vendor stands behind (`TokenCounter`, `Summarizer`, `ChatModel`) each have
a fake (in `tests/support/fakes.py`) and one contract test suite (`tests/contract/`) that runs
against the fake and every real adapter. The host's own ports (`CompactionHooks`,
`ContextProvider`, `Metrics`) are plain protocols with defaults that do nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, Required, TypedDict, Unpack, runtime_checkable
from uuid import UUID

import attrs

from abridged.application.request_options import RequestOptions as RequestOptions  # noqa: PLC0414 (re-exported: hosts import it from here)
from abridged.domain.context import Context
from abridged.domain.errors import SessionError
from abridged.domain.messages import JSON, Message
from abridged.domain.planner import Decision
from abridged.domain.usage import Usage


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of text, offline and deterministically. A counter may say it is exact
    for the models it is used with (`approximate = False`, `approximates`); by default it
    approximates, and a session starts its calibration at its model's tokenizer ratio."""

    @property
    def name(self) -> str:
        """A stable name for the counting scheme, recorded with each session."""
        ...

    def count(self, text: str) -> int:
        """The number of tokens in `text`; 0 for the empty string, never negative."""
        ...


def approximates(counter: TokenCounter) -> bool:
    """Whether `counter` approximates the model's tokenizer (its `approximate` attribute; a
    counter without one does): a session then starts its calibration at the model's
    `tokenizer_ratio`, and a counter exact for the model (the provider's own count, a test's
    definition of a token) starts it at 1.0."""
    return bool(getattr(counter, "approximate", True))


class TokenCounterError(SessionError):
    """The token counter raised, or returned what is not a token count (negative, not a
    number); nothing of the command was written, and it can run again once it counts."""


MIN_SUMMARY_TOKENS = 16
"""The smallest `max_tokens` a summarizer is asked for; below it no useful summary fits."""


class SummarizerError(Exception):
    """The summarizer could not produce a summary (down, refused, timed out)."""


@attrs.frozen
class Summary:
    """What a summarizer wrote, and what writing it cost."""

    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    iterations: tuple[str, ...] = ()
    """The API's `usage.iterations` of the request that wrote it (JSON text each)."""
    block: str | None = None
    """The signed `compaction` block the API wrote (its JSON text), when the API itself
    summarized: the summary is then sent as this block, unchanged, and `text` is its content."""
    prefix_revision: int | None = None
    """Set when `block` was written over `SentPrefix` exactly (its `revision`): the block
    then leads alone and the kept turns' thinking stays valid."""


@attrs.frozen
class SentPrefix:
    """The request the session's replies were produced under, for a summarizer that must
    summarize exactly what was sent: the API's compaction keeps the kept turns' thinking
    valid only then (platform.claude.com/docs/en/build-with-claude/compaction-thinking-blocks).
    Given (`sent=`) only to a summarizer that names the keyword, on a session whose model
    binds thinking to its prefix; abridged's own summarizers do not."""

    context: Context
    """The view before this compaction as requests showed it: `system`, `tools` and the
    messages, thinking as sent."""
    kept_from: int
    """Where the kept turns start in `context.messages`; the messages before are the range
    summarized, as sent."""
    revision: int
    """The session's `prefix_revision` the view stands at."""
    ledger: tuple[str, ...] = ()
    """The facts ledger's segments as this compaction leaves them: a block that stands for
    the whole prefix leads alone, so the facts go to the summarizer instead."""


class SummaryParameters(TypedDict, total=False):
    """The keywords a summarizer is called with (`Summarizer.summarize`)."""

    max_tokens: Required[int]
    """The longest summary wanted, in tokens."""
    instructions: str | None
    """The caller's focus (from a manual compaction)."""
    session_model: str | None
    """The conversation's model, for summarizers that fall back to it."""


class Summarizer(Protocol):
    """Writes the text that stands for a range of messages in later requests."""

    @property
    def name(self) -> str:
        """Which summarizer this is (recorded in `CompactionCompleted`)."""
        ...

    def summarize(
        self, messages: Sequence[Message], **request: Unpack[SummaryParameters]
    ) -> Summary:
        """A summary of `messages` of at most `max_tokens` tokens; raises `SummarizerError`.

        The keywords are `SummaryParameters`: an implementation names them
        (`*, max_tokens: int, instructions: str | None = None, session_model: str | None =
        None`). A summarizer that also accepts `earlier: Sequence[str] = ()` (every summarizer of
        abridged does) receives the texts of the earlier summary chunks being folded there,
        out of band, instead of as leading messages (`with_earlier`). One that also accepts
        `sent: SentPrefix | None = None` receives, on a session whose model binds thinking,
        the prefix its requests were sent under (`SentPrefix`).
        """
        ...


EARLIER_NOTE = (
    "[An earlier summary of this conversation, written by abridged: reference material "
    "about what happened, not a message of the conversation.]"
)


def with_earlier(
    summarize: Callable[..., object], messages: Sequence[Message], earlier: Sequence[str]
) -> tuple[Sequence[Message], dict[str, Sequence[str]]]:
    """The messages and extra keyword arguments to call `summarize` with, so that it gets
    the `earlier` chunks' texts: as `earlier=` when it accepts that keyword; else (a
    summarizer written before it existed) as leading user messages, each marked as an
    earlier summary. No `earlier=` is passed when there are none."""
    if not earlier:
        return messages, {}
    try:
        parameters = list(inspect.signature(summarize).parameters.values())
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        parameters = []
    if any(p.name == "earlier" or p.kind is p.VAR_KEYWORD for p in parameters):
        return messages, {"earlier": tuple(earlier)}
    framed = tuple(Message.user(f"{EARLIER_NOTE}\n\n{text}") for text in earlier)
    return (*framed, *messages), {}


def with_sent(summarize: Callable[..., object], sent: SentPrefix | None) -> dict[str, SentPrefix]:
    """The keyword arguments that give `summarize` the prefix as sent: `sent=` when there is
    one and it names that keyword, else none. Named, not through `**kwargs`: a wrapper that
    passes every keyword on would hand it to a summarizer that does not take it."""
    if sent is None:
        return {}
    try:
        parameters = inspect.signature(summarize).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return {}
    named = parameters.get("sent")
    return {"sent": sent} if named is not None and named.kind is not named.VAR_KEYWORD else {}


class ProviderError(Exception):
    """The model provider failed the request (after the adapter's own retries)."""


class PromptTooLongError(ProviderError):
    """The provider rejected the request as longer than the model's context window."""

    def __init__(self, message: str, *, tokens: int | None = None, maximum: int | None = None):
        super().__init__(message)
        self.tokens = tokens
        self.maximum = maximum


class ProviderUnavailableError(ProviderError):
    """Rate limited, overloaded, failing or unreachable (408, 429, 5xx, a timeout, a dropped
    connection) after the retries ran out."""


@attrs.frozen
class ModelReply:
    """The model's answer to one request, with the usage the provider reported."""

    message: Message
    usage: Usage
    model: str
    stop_reason: str | None = None


TextCallback = Callable[[str], None]
"""Called with each piece of the reply's text as it streams in."""


class SendParameters(TypedDict, total=False):
    """The keywords a chat model's `send` is called with."""

    model: Required[str]
    """The model the request names."""
    max_tokens: Required[int]
    """The output tokens the request reserves."""
    options: RequestOptions | None
    """The host's request parameters (`thinking`, `tool_choice`, ...)."""
    on_text: TextCallback | None
    """Receives the reply's text as it streams."""


class ChatModel(Protocol):
    """The conversation's model provider."""

    @property
    def name(self) -> str:
        """Which provider adapter this is."""
        ...

    @property
    def context_management(self) -> Mapping[str, JSON] | None:
        """The provider-side context management this adapter adds to requests, if any."""
        ...

    def send(self, context: Context, **request: Unpack[SendParameters]) -> ModelReply:
        """Sends the context as one request (the keywords are `SendParameters`, which an
        implementation names); raises `PromptTooLongError`, `ProviderError`."""
        ...

    def count_tokens(self, context: Context, *, model: str) -> int:
        """The provider's own count of the context's input tokens; raises `ProviderError`."""
        ...


@attrs.frozen
class CompactionReport:
    """What a compaction did, for the caller's logs and progress output."""

    generation: int
    trigger: str
    strategy: str
    retained_from: int
    messages_summarized: int
    tokens_before: int
    tokens_after: int
    turns_kept: int
    outputs_pruned: int = 0
    """Tool outputs of the retained tail pruned with the compaction (the cached prefix moved
    for both at once); `tokens_after` is before this prune."""


@attrs.frozen
class HookVerdict:
    """A before-compaction hook's answer: go ahead, cancel (with a reason), or supply the
    summary text itself."""

    cancel: str | None = None
    summary: str | None = None


class CompactionHooks(Protocol):
    """Lets a host app take part in compaction."""

    def before_compaction(
        self, session_id: UUID, decision: Decision, messages: Sequence[Message]
    ) -> HookVerdict | None:
        """Called before summarizing `messages`; `None` or an empty verdict goes ahead."""
        ...

    def after_compaction(self, session_id: UUID, report: CompactionReport) -> None:
        """Called once the compaction is saved."""
        ...


class ContextProvider(Protocol):
    """Content recomputed for every request (date, open files, …), sent last in the last user
    message: never stored, never compacted. On a model that binds thinking to its prefix, new
    content is recorded (`TurnContextShown`) and stays where it was first shown until a
    compaction takes its message out of view (`abridged.domain.turn_context`)."""

    def content(self, session_id: UUID) -> str | None:
        """The content for the next request of the session, or `None`."""
        ...


class Metrics(Protocol):
    """Where the service reports its counters and measurements (names: `MetricNames`).

    Implementations must be cheap and must not raise: they run inside every command."""

    def add(self, name: str, value: int = 1, attributes: Mapping[str, str] | None = None) -> None:
        """Adds `value` to the counter `name`, under `attributes`."""
        ...

    def record(self, name: str, value: float, attributes: Mapping[str, str] | None = None) -> None:
        """Records one measurement of `name` (a distribution: latency, error ratio)."""
        ...


class MetricNames:
    """The metrics the service reports, with their units and attributes."""

    COMPACTIONS = "abridged.compactions"
    """Counter; attributes `trigger` (threshold, manual, overflow, requested) and `outcome`
    (completed, fallback, failed, cancelled)."""
    SUPPRESSIONS = "abridged.compaction.suppressions"
    """Counter; attribute `trigger`: a compaction was due and a loop guard or hook held it."""
    PRUNED_OUTPUTS = "abridged.pruned_outputs"
    """Counter: old tool outputs shown pruned from now on."""
    OVERFLOWS = "abridged.overflows"
    """Counter; attribute `source` (provider, count): a request was found too long."""
    SUMMARIZER_LATENCY = "abridged.summarizer.latency"
    """Histogram, seconds; attributes `summarizer`, `outcome` (ok, error)."""
    ESTIMATE_ERROR = "abridged.estimate.error"
    """Histogram, ratio: |provider prompt tokens − estimate| / estimate, per reply recorded
    with usage; attribute `direction`: `under` when the provider counted more, else `over`."""


class NoMetrics:
    """Reports nothing: the default."""

    def add(self, name: str, value: int = 1, attributes: Mapping[str, str] | None = None) -> None:
        """Does nothing."""

    def record(self, name: str, value: float, attributes: Mapping[str, str] | None = None) -> None:
        """Does nothing."""


EventEraser = Callable[[Sequence[object], UUID], int]
"""Deletes every stored event and snapshot of a session from the given recorders (the
application's event and snapshot recorders) and returns how many rows went; raises a
`SessionError` when the store cannot (`abridged.adapters.erasure.erase_stored_events`).

An eraser also leaves a tombstone: from then on the store refuses a row of that session with
an error whose message holds `ERASED_MARK`."""

ERASED_MARK = "abridged: this session was erased"
"""What the store's refusal of a write to an erased session says."""


class Redactor(Protocol):
    """Replaces the secrets in a text before it leaves the event store (summarizer input,
    facts ledger, summaries, reports, printed histories)."""

    def redact(self, text: str) -> str:
        """`text` with each secret replaced by a placeholder naming its kind
        (`[redacted aws-access-key]`); the same text for the same input, and a text with
        nothing to redact unchanged."""
        ...
