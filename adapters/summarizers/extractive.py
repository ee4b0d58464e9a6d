"""`ExtractiveSummarizer`: the `Summarizer` port, by extraction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from abridged.adapters.summarizers.extraction import extract
from abridged.adapters.summarizers.fitting import Fitter
from abridged.application.ports import MIN_SUMMARY_TOKENS, SummarizerError, Summary
from abridged.domain.messages import Message
from abridged.domain.tokens import message_tokens

if TYPE_CHECKING:
    from abridged.application.ports import TokenCounter


class ExtractiveSummarizer:
    """Summarizes by extraction, deterministically and offline, within `max_tokens` by `counter`.

    Keeps, in this order when space is short: the user's requests, errors (verbatim), file
    paths, commands with their outcome, and the assistant's decisions."""

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter

    @property
    def name(self) -> str:
        """Always "extractive"."""
        return "extractive"

    @property
    def model(self) -> str:
        """The `Summary.model` this summarizer reports: "extractive-v1"."""
        return "extractive-v1"

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
    ) -> Summary:
        """A Markdown summary of at most `max_tokens` tokens by the counter, never blank.

        `instructions` appear first as "Focus: ..." and favour lines that share their words.
        Raises `SummarizerError` for no messages or `max_tokens` below 16."""
        if not messages:
            raise SummarizerError("nothing to summarize: no messages were given")
        if max_tokens < MIN_SUMMARY_TOKENS:
            raise SummarizerError(
                f"max_tokens={max_tokens} is too small for a useful summary; "
                f"allow at least {MIN_SUMMARY_TOKENS} tokens"
            )
        focus = " ".join(instructions.split()) if instructions else ""
        items = extract(messages)
        text, output_tokens = Fitter(self._counter, max_tokens, focus, items).fit(len(messages))
        if not text.strip() or output_tokens > max_tokens:
            raise SummarizerError(
                f"could not fit a summary in {max_tokens} tokens with the "
                f"{self._counter.name!r} counter; raise max_tokens"
            )
        count = self._counter.count
        return Summary(
            text=text,
            model=self.model,
            input_tokens=sum(message_tokens(m, count) for m in messages),
            output_tokens=output_tokens,
        )
