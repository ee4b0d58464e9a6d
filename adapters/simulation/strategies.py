"""The strategies `abridged simulate` compares: abridged itself and honest references.

Each strategy replays a transcript and yields, before each assistant message, the request
body it would send (or `None` when it could not build one that fits). They share the token
counter and the summarizer (the extractive one unless another is given), so differences come
from *what* each keeps and *when* it changes the prefix, not from the tools.

References (what each is modelled on, and what it does here):

- `none`: no compaction; every message is sent whole. Listed only when the whole transcript
  fits the budget.
- `langchain`: a summarization middleware in the style of LangChain's: when the request
  reaches `trigger_ratio` (0.7) of the window, everything but the last `keep_messages` (20)
  messages (never splitting a tool call from its result) is summarized, together with the
  previous summary, into one summary message. Cache breakpoints on the system prompt and the
  last message.
- `claude-code`: a full summary near the limit in the style of Claude Code's auto-compact:
  when the request reaches `trigger_ratio` (0.92) of the budget, everything before the latest
  turn (the last user prompt) is summarized, with the previous summary, into one message;
  nothing else stays verbatim. Breakpoints on the system prompt and the last message.
- `sliding-window`: the most recent messages that fit the budget, the oldest dropped, no
  summary. Breakpoints on the system prompt and the last message.

A reference cannot send a single message larger than the window either: every reference
shows a tool output over abridged's `tool_output_share` as plain head and tail (abridged's
append-time truncation without its salient lines), and when even the kept messages do not fit
it keeps fewer (counted as a forced trim).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.recorded import is_reply
from abridged.adapters.transcripts import Transcript, TranscriptError
from abridged.application.ports import (
    Summarizer,
    SummarizerError,
    Summary,
    TokenCounter,
    with_earlier,
)
from abridged.application.service import Sessions
from abridged.domain.errors import ContextOverflowError, SessionError
from abridged.domain.inputs import DEFAULT_MAX_MESSAGE_BYTES
from abridged.domain.messages import JSON, Message, Role, TextBlock
from abridged.domain.settings import CompactionSettings, Limits
from abridged.domain.tokens import block_tokens as count_block
from abridged.domain.tokens import message_tokens, system_tokens, tools_tokens
from abridged.domain.truncation import plan_truncations, shown

Body = dict[str, Any]


@attrs.define
class Counters:
    """What a strategy did besides sending requests."""

    prunes: int = 0
    compactions: int = 0
    summarizer_calls: int = 0
    summarizer_input_tokens: int = 0
    summarizer_output_tokens: int = 0
    not_sent: int = 0
    forced_trims: int = 0
    repeated_compactions: int = 0
    """Compactions with no new message since the previous one."""
    refused: str | None = None
    """The message the session refused, named by its line: the run stopped there."""


class CountingSummarizer:
    """A summarizer that counts its calls and tokens into `counters`."""

    def __init__(self, inner: Summarizer, counters: Counters) -> None:
        self.inner = inner
        self.counters = counters

    @property
    def name(self) -> str:
        return self.inner.name

    def summarize(self, messages: Sequence[Message], **options: Any) -> Summary:
        """The inner summarizer's summary, counted; every option (`max_tokens`,
        `instructions`, `session_model`, `earlier`) passed on as given, so the wrapper never
        hides a keyword the service uses."""
        self.counters.summarizer_calls += 1
        summary = self.inner.summarize(messages, **options)
        self.counters.summarizer_input_tokens += summary.input_tokens
        self.counters.summarizer_output_tokens += summary.output_tokens
        return summary


@attrs.frozen
class Setup:
    """What every strategy of one run shares."""

    window: int
    reserved_output: int
    counter: TokenCounter
    summarizer_factory: Callable[[TokenCounter], Summarizer]
    model: str = "claude-sonnet-4-5"
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    """abridged's limit on one message (`simulate --max-message-bytes`)."""


class Strategy:
    """A way to keep a conversation in the window; `requests` yields one body per request."""

    name = "strategy"

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.counters = Counters()

    def requests(self, transcript: Transcript) -> Iterator[Body | None]:
        raise NotImplementedError

    def fits_only(self, transcript: Transcript) -> bool:
        """Whether the strategy applies only when the whole transcript fits."""
        return False


class CountedAsBilled:
    """The run's counter, as the one the replayed model counts with: `simulate` bills every
    request and sizes every window by it, so a session starts its calibration at 1.0 whatever
    the model's tokenizer ratio (replies carry no usage to learn another from)."""

    approximate = False

    def __init__(self, inner: TokenCounter) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    def count(self, text: str) -> int:
        return self.inner.count(text)


class AbridgedStrategy(Strategy):
    """abridged's `Sessions` service with the given settings, on an in-memory store."""

    def __init__(self, setup: Setup, settings: CompactionSettings, label: str) -> None:
        super().__init__(setup)
        self.settings = settings
        self.name = label

    def requests(self, transcript: Transcript) -> Iterator[Body | None]:
        setup = self.setup
        summarizer = CountingSummarizer(setup.summarizer_factory(setup.counter), self.counters)
        app = Sessions(
            counter=CountedAsBilled(setup.counter),
            summarizer=summarizer,
            env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
            max_message_bytes=setup.max_message_bytes,
        )
        try:
            session_id = app.start_session(
                model=transcript.model or setup.model,
                context_window=setup.window,
                max_output_tokens=setup.reserved_output,
                system=transcript.system,
                tools=transcript.tools,
                settings=self.settings,
            )
        except SessionError as error:
            # No session takes it (a system prompt larger than the window): no request is.
            self.counters.refused = str(TranscriptError(transcript.source, None, str(error)))
            yield from self._never_sent(transcript.messages)
            return
        appended_since = 1
        for index, message in enumerate(transcript.messages):
            try:
                if not is_reply(index, message):
                    app.append_message(session_id, message)
                    appended_since += 1
                    continue
                try:
                    prepared = app.prepare_request(session_id)
                except ContextOverflowError:
                    self.counters.not_sent += 1
                    yield None
                else:
                    if prepared.compaction is not None:
                        if appended_since == 0:
                            self.counters.repeated_compactions += 1
                        appended_since = 0
                    yield render_request(
                        prepared.context, model=prepared.model, max_tokens=prepared.max_tokens
                    )
                app.record_reply(session_id, message)
                appended_since += 1
            except SessionError as error:
                # A message the session refuses (system messages that outgrow the budget,
                # say): named by its line, as `replay` names it, among many transcripts. The
                # run stops there, its later requests not sent; the other runs go on.
                self.counters.refused = str(refused(transcript, index, error))
                yield from self._never_sent(transcript.messages[index + 1 :], index + 1)
                break
        for event in app.history(session_id):
            kind = type(event).__name__
            if kind == "ToolsPruned":
                self.counters.prunes += 1
            elif kind == "CompactionCompleted":
                self.counters.compactions += 1

    def _never_sent(self, messages: Sequence[Message], first: int = 0) -> Iterator[None]:
        """No request for the replies among `messages`: each counted as not sent."""
        for index, message in enumerate(messages):
            if is_reply(index + first, message):
                self.counters.not_sent += 1
                yield None


def refused(transcript: Transcript, index: int, error: SessionError) -> TranscriptError:
    """The error for the message at `index` a session refused, naming its line (or its
    number, in a generated transcript)."""
    if transcript.line_numbers:
        return TranscriptError(transcript.source, transcript.line_numbers[index], str(error))
    return TranscriptError(transcript.source, None, f"message {index + 1}: {error}")


class _Reference(Strategy):
    """What the references share: a shown history, counts, summaries, request bodies."""

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.limits = Limits(setup.window, setup.reserved_output, CompactionSettings())
        self.summarizer = CountingSummarizer(setup.summarizer_factory(setup.counter), self.counters)

    def shown(self, message: Message) -> Message:
        count = self.setup.counter.count
        counts = [count_block(b, count) for b in message.content]
        truncations, _ = plan_truncations(message, self.limits.tool_output_tokens, count, counts)
        return shown(message, truncations)

    def fixed_tokens(self, transcript: Transcript) -> int:
        count = self.setup.counter.count
        return 16 + system_tokens(transcript.system, count) + tools_tokens(transcript.tools, count)

    def tokens(self, message: Message) -> int:
        return message_tokens(message, self.setup.counter.count)

    def summarize(self, summary: str | None, messages: Sequence[Message]) -> str:
        """`messages` summarized with the previous `summary` folded in as abridged folds its
        chunks (`with_earlier`), not as a user's message an extractive summarizer quotes."""
        earlier = (summary,) if summary else ()
        given, extra = with_earlier(self.summarizer.inner.summarize, messages, earlier)
        try:
            tokens = self.limits.summary_tokens
            return self.summarizer.summarize(given, max_tokens=tokens, **extra).text
        except SummarizerError:
            return summary or "[earlier messages dropped]"

    def keep(self, message: Message, kept: list[Message], sizes: list[int]) -> None:
        """Appends the message as shown, and its tokens."""
        shown_message = self.shown(message)
        kept.append(shown_message)
        sizes.append(self.tokens(shown_message))

    def request(
        self, transcript: Transcript, summary: str | None, kept: Sequence[Message], *, fits: bool
    ) -> Body | None:
        """The request's body when it `fits` the budget; else None, counted as not sent."""
        if not fits:
            self.counters.not_sent += 1
            return None
        return self.body(transcript, summary, kept)

    def body(self, transcript: Transcript, summary: str | None, kept: Sequence[Message]) -> Body:
        messages = list(kept)
        if summary:
            block = TextBlock(f"Summary of the earlier conversation:\n{summary}")
            if messages and messages[0].role is Role.USER:
                messages[0] = Message(Role.USER, (block, *messages[0].content))
            else:
                messages.insert(0, Message(Role.USER, (block,)))
        elif messages and messages[0].role is Role.ASSISTANT:
            messages.insert(0, Message.user("[earlier messages omitted]"))
        body: Body = {
            "model": transcript.model or self.setup.model,
            "max_tokens": self.setup.reserved_output,
            "messages": [m.to_wire() for m in messages],
        }
        marker = {"type": "ephemeral"}
        if transcript.system:
            body["system"] = [{"type": "text", "text": transcript.system, "cache_control": marker}]
        if transcript.tools:
            tools: list[JSON] = [dict(t) for t in transcript.tools]
            body["tools"] = tools
        # The last message with content (a system message may be its own fields only).
        last: list[Any] = next(
            (m["content"] for m in reversed(body["messages"]) if m.get("content")), []
        )
        for block in reversed(last):
            if block["type"] not in {"thinking", "redacted_thinking"}:
                block["cache_control"] = dict(marker)
                break
        return body


def safe_starts(messages: Sequence[Message]) -> list[int]:
    """Indices where kept messages may start without separating a tool call from its result:
    a user prompt, or an assistant message (a summary or a note then leads)."""
    return [
        k
        for k, m in enumerate(messages)
        if k > 0 and (m.is_user_prompt or m.role is Role.ASSISTANT)
    ]


def trimmed(
    kept: list[Message], sizes: list[int], room: int
) -> tuple[list[Message], list[int], int]:
    """The kept messages (and their sizes) without their oldest turns, dropped one at a time
    at `safe_starts` while they take more than `room` tokens and a later start is left; and
    how many were dropped."""
    drops = 0
    while sum(sizes) > room:
        starts = safe_starts(kept)
        if not starts:
            break
        drops += 1
        kept, sizes = kept[starts[0] :], sizes[starts[0] :]
    return kept, sizes, drops


class _Summarizing(_Reference):
    """Summary + kept tail, compacted by `cut` when `due` says so."""

    def due(self, tokens: int) -> bool:
        raise NotImplementedError

    def cut(self, messages: Sequence[Message], starts: list[int]) -> int | None:
        raise NotImplementedError

    def requests(self, transcript: Transcript) -> Iterator[Body | None]:
        fixed = self.fixed_tokens(transcript)
        summary: str | None = None
        kept: list[Message] = []
        sizes: list[int] = []
        new_since = 0
        for index, message in enumerate(transcript.messages):
            if is_reply(index, message):
                summary_tokens = self.setup.counter.count(summary) + 16 if summary else 0
                total = fixed + summary_tokens + sum(sizes)
                if self.due(total):
                    cut = self.cut(kept, safe_starts(kept))
                    if cut:
                        if new_since == 0:
                            self.counters.repeated_compactions += 1
                        summary = self.summarize(summary, kept[:cut])
                        self.counters.compactions += 1
                        kept, sizes = kept[cut:], sizes[cut:]
                        new_since = 0
                summary_tokens = self.setup.counter.count(summary) + 16 if summary else 0
                room = self.limits.budget - fixed - summary_tokens
                kept, sizes, trims = trimmed(kept, sizes, room)
                self.counters.forced_trims += trims
                yield self.request(transcript, summary, kept, fits=sum(sizes) <= room)
            self.keep(message, kept, sizes)
            new_since += 1


class LangChainStyle(_Summarizing):
    """Summarize at 70% of the window, keeping the last 20 messages."""

    name = "langchain"

    def __init__(self, setup: Setup, trigger_ratio: float = 0.7, keep_messages: int = 20) -> None:
        super().__init__(setup)
        self.trigger_ratio = trigger_ratio
        self.keep_messages = keep_messages

    def due(self, tokens: int) -> bool:
        return tokens >= self.trigger_ratio * self.setup.window

    def cut(self, messages: Sequence[Message], starts: list[int]) -> int | None:
        wanted = len(messages) - self.keep_messages
        # The middleware moves the cut earlier rather than split a tool call from its result.
        earlier = [k for k in starts if k <= wanted]
        return earlier[-1] if earlier else None


class ClaudeCodeStyle(_Summarizing):
    """Summarize everything but the latest turn when the request nears the limit."""

    name = "claude-code"

    def __init__(self, setup: Setup, trigger_ratio: float = 0.92) -> None:
        super().__init__(setup)
        self.trigger_ratio = trigger_ratio

    def due(self, tokens: int) -> bool:
        return tokens >= self.trigger_ratio * self.limits.budget

    def cut(self, messages: Sequence[Message], starts: list[int]) -> int | None:
        prompts = [k for k in starts if messages[k].is_user_prompt]
        if prompts:
            return prompts[-1]
        # One long turn: keep only its latest exchange.
        return starts[-1] if starts else None


class SlidingWindow(_Reference):
    """The most recent messages that fit the budget; the oldest are dropped."""

    name = "sliding-window"

    def requests(self, transcript: Transcript) -> Iterator[Body | None]:
        room = self.limits.budget - self.fixed_tokens(transcript) - 16
        kept: list[Message] = []
        sizes: list[int] = []
        for index, message in enumerate(transcript.messages):
            if is_reply(index, message):
                kept, sizes, trims = trimmed(kept, sizes, room)
                self.counters.compactions += trims
                yield self.request(transcript, None, kept, fits=sum(sizes) <= room)
            self.keep(message, kept, sizes)


class NoCompaction(_Reference):
    """Every message sent whole; applies only when the transcript fits the budget."""

    name = "none"

    def fits_only(self, transcript: Transcript) -> bool:
        return True

    def requests(self, transcript: Transcript) -> Iterator[Body | None]:
        kept: list[Message] = []
        for index, message in enumerate(transcript.messages):
            if is_reply(index, message):
                yield self.body(transcript, None, kept)
            kept.append(message)


REFERENCES: dict[str, type[_Reference]] = {
    "none": NoCompaction,
    "langchain": LangChainStyle,
    "claude-code": ClaudeCodeStyle,
    "sliding-window": SlidingWindow,
}
