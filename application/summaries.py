"""Writing a compaction's summary: summarize, fit it to its budget, or fall back.

`SummaryWriter` is the one collaborator of the service that talks to the summarizer port
for compactions. It decides nothing about *when* or *where* to compact (the planner does);
it turns a `Decision` and the messages it covers into the text of one summary chunk.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import attrs

from abridged.application.ports import (
    MIN_SUMMARY_TOKENS,
    Redactor,
    SentPrefix,
    Summarizer,
    SummarizerError,
    Summary,
    TokenCounter,
    with_earlier,
    with_sent,
)
from abridged.application.redaction import NoRedaction, redact_messages, storable
from abridged.domain.context import SummaryChunk, render_summary
from abridged.domain.footer import files_footer
from abridged.domain.messages import Message, RedactedThinkingBlock, ThinkingBlock, WireBlock
from abridged.domain.planner import Decision
from abridged.domain.tokens import text_block_tokens, wire_block_tokens
from abridged.domain.vocabulary import CompactionStrategy


@attrs.frozen
class WrittenSummary:
    """The text of a new summary chunk, fitted to its limit, and what writing it cost."""

    text: str
    tokens: int
    model: str
    strategy: CompactionStrategy
    summarizer: str
    input_tokens: int = 0
    output_tokens: int = 0
    block: str | None = None
    """The API's signed compaction block (JSON text), sent as is; see `Summary.block`."""
    iterations: tuple[str, ...] = ()
    """The API's `usage.iterations` when the API compacted."""
    chained_revision: int | None = None
    """The prefix revision the API's block was written over exactly (`Summary.prefix_revision`)."""
    text_tokens: int | None = None
    """With a `block`: the tokens of the summary read as text (`SummaryChunk.text_tokens`)."""

    @property
    def as_text_tokens(self) -> int:
        """The tokens of the summary as `render_summary` text (a chunk without its block)."""
        return self.tokens if self.text_tokens is None else self.text_tokens


@attrs.frozen
class SummaryRequest:
    """What one compaction asks of the writer."""

    decision: Decision
    messages: tuple[Message, ...]
    """The messages the new chunk covers."""
    earlier: tuple[SummaryChunk, ...]
    """Chunks folded into the new one (empty unless the decision re-summarizes)."""
    first_position: int
    generation: int
    session_model: str
    folding_strategy: CompactionStrategy
    include_thinking: bool
    instructions: str | None = None
    sent: SentPrefix | None = None
    """What the session's requests were sent under, for a summarizer that takes it
    (`SentPrefix`); our own summarizers ignore it."""


class SummaryWriter:
    """Summarizes a compaction's messages within the decision's summary budget.

    The `redactor` is applied to everything the summarizer reads (messages, earlier chunks,
    focus) and to every summary text before it is recorded (a hook's, a fallback note)."""

    def __init__(
        self, counter: TokenCounter, summarizer: Summarizer, redactor: Redactor | None = None
    ) -> None:
        self.counter = counter
        self.summarizer = summarizer
        self.redactor: Redactor = redactor if redactor is not None else NoRedaction()

    def supplied(self, request: SummaryRequest, text: str) -> WrittenSummary:
        """A summary a hook supplied, with the files footer, fitted to the limit."""
        footer = _footer(request)
        return self._finish(request, footer, text, "hook", "hook", "hook", (0, 0))

    def write(self, request: SummaryRequest) -> WrittenSummary:
        """Summarizes `request.messages`; raises `SummarizerError` when the summarizer fails."""
        footer = _footer(request)
        summary = self._summarize(request, self._text_budget(request, footer))
        text, model, block = summary.text, summary.model, summary.block
        usage = (summary.input_tokens, summary.output_tokens)
        strategy: CompactionStrategy = "additive"
        if block is not None:
            # The API's signed block: neither footer nor fitting may change a byte of it.
            if request.earlier:
                strategy = request.folding_strategy
            tokens = wire_block_tokens(WireBlock.of(json.loads(block)), self.counter.count)
            last = request.decision.retained_from - 1
            shown = render_summary(text, request.first_position, last, request.generation)
            return WrittenSummary(
                text,
                tokens,
                model,
                strategy,
                self.summarizer.name,
                *usage,
                block,
                summary.iterations,
                summary.prefix_revision,
                text_block_tokens(shown, self.counter.count),
            )
        if request.earlier:
            strategy = request.folding_strategy
        return self._finish(request, footer, text, model, strategy, self.summarizer.name, usage)

    def fallback(self, request: SummaryRequest, error: SummarizerError) -> WrittenSummary:
        """The note that replaces a range whose summary failed (threshold compaction fails
        open); earlier chunks being folded are kept after it."""
        said = storable(str(error))  # the note is stored and sent
        text = (
            f"[{len(request.messages)} earlier messages were dropped without a summary: "
            f"the summarizer failed ({said}).]"
        )
        if request.earlier:
            # The note goes first: fitting cuts from the end, and it must survive.
            text = "\n\n".join([text, *(c.text for c in request.earlier)])
        footer = _footer(request)
        return self._finish(request, footer, text, "none", "truncate", self.summarizer.name, (0, 0))

    def _text_budget(self, request: SummaryRequest, footer: str) -> int:
        last = request.decision.retained_from - 1
        framing = text_block_tokens(
            render_summary("", request.first_position, last, 0), self.counter.count
        )
        footer_tokens = self.counter.count(footer) + 2 if footer else 0
        return request.decision.summary_max_tokens - framing - footer_tokens

    def _finish(
        self,
        request: SummaryRequest,
        footer: str,
        text: str,
        model: str,
        strategy: CompactionStrategy,
        summarizer: str,
        usage: tuple[int, int],
    ) -> WrittenSummary:
        if footer:
            text = f"{text.rstrip()}\n\n{footer}"
        text, tokens = self._fit(self.redactor.redact(text), request)
        return WrittenSummary(text, tokens, model, strategy, summarizer, *usage)

    def _summarize(self, request: SummaryRequest, text_budget: int) -> Summary:
        if text_budget < MIN_SUMMARY_TOKENS:
            raise SummarizerError(f"only {text_budget} tokens are left for the summary")
        messages = request.messages
        if not request.include_thinking:
            messages = tuple(_without_thinking(m) for m in messages)
        messages = redact_messages(self.redactor, messages)
        # Earlier chunks are the session's own, carried out of band: a message whose text
        # looks like a summary is never taken for one.
        earlier = tuple(self.redactor.redact(c.text) for c in request.earlier)
        # One call per compaction, even when the cut falls inside a turn: the facts ledger
        # keeps the current request's prompt, commands and errors verbatim, so a separate
        # "turn so far" summary would cost a second call for little that is not kept already.
        summary = self._summarize_within(request, messages, earlier, text_budget)
        if summary.block is not None:
            return summary
        return attrs.evolve(summary, text=summary.text.strip(), prefix_revision=None)

    def _summarize_within(
        self,
        request: SummaryRequest,
        messages: Sequence[Message],
        earlier: Sequence[str],
        limit: int,
    ) -> Summary:
        if limit < MIN_SUMMARY_TOKENS:
            raise SummarizerError(f"only {limit} tokens are left for the summary")
        messages, extra = with_earlier(self.summarizer.summarize, messages, earlier)
        sent = with_sent(self.summarizer.summarize, request.sent)
        instructions = request.instructions
        if instructions is not None:
            instructions = self.redactor.redact(instructions)
        summary = self.summarizer.summarize(
            messages,
            max_tokens=limit,
            instructions=instructions,
            session_model=request.session_model,
            **extra,
            **sent,
        )
        if not summary.text.strip():
            raise SummarizerError("the summarizer returned an empty summary")
        if summary.block is None and self.counter.count(summary.text) > limit:
            # One retry asking for less; past that the summary is cut to fit.
            retry = self.summarizer.summarize(
                messages,
                max_tokens=max(MIN_SUMMARY_TOKENS, limit // 2),
                instructions=instructions,
                session_model=request.session_model,
                **extra,
            )
            if retry.text.strip():
                summary = retry
        return summary

    def _fit(self, text: str, request: SummaryRequest) -> tuple[str, int]:
        """The text, cut at its end (marked "…") so its rendered chunk fits the limit.

        A binary search over the kept length: a bounded number of counts, whatever the text.
        """
        first, last = request.first_position, request.decision.retained_from - 1
        limit = request.decision.summary_max_tokens

        def cost(candidate: str) -> int:
            rendered = render_summary(candidate, first, last, request.generation)
            return text_block_tokens(rendered, self.counter.count)

        tokens = cost(text)
        if tokens <= limit:
            return text, tokens
        low, high = 0, len(text)
        while low < high:
            middle = (low + high + 1) // 2
            if cost(text[:middle].rstrip() + " …") <= limit:
                low = middle
            else:
                high = middle - 1
        fitted = text[:low].rstrip() + " …" if low else "…"
        return fitted, cost(fitted)


def _footer(request: SummaryRequest) -> str:
    # With the facts ledger on, the files read and modified are its entries (with their
    # message ranges), carried across compactions; the footer is only for a ledger turned off.
    if request.decision.ledger_max_tokens > 0:
        return ""
    return files_footer(request.messages)


def _without_thinking(message: Message) -> Message:
    kept = tuple(
        b for b in message.content if not isinstance(b, ThinkingBlock | RedactedThinkingBlock)
    )
    return attrs.evolve(message, content=kept) if kept else message
