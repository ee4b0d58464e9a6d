"""`ExtractiveSummarizer`: the `Summarizer` port, by extraction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from abridged.adapters.summarizers.extraction import extract
from abridged.adapters.summarizers.fitting import Fitter
from abridged.application.ports import MIN_SUMMARY_TOKENS, SummarizerError, Summary
from abridged.domain.messages import Message
from abridged.domain.tokens import CountText, message_tokens

if TYPE_CHECKING:
    from abridged.application.ports import TokenCounter

# Counting a long history's every text cost more than making its summary; a reported size
# needs no such precision, so beyond this much text a sample sets the rate.
_EXACT_CHARS = 65_536
_WINDOWS = 32
_WINDOW_CHARS = 2_048


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
        earlier: Sequence[str] = (),
    ) -> Summary:
        """A Markdown summary of at most `max_tokens` tokens by the counter, never blank.

        `instructions` appear first as "Focus: ..." and favour lines that share their words.
        `earlier` are the texts of earlier chunks folded into this one (see `extract`).
        Raises `SummarizerError` for no messages or `max_tokens` below 16. The summary's
        `input_tokens` is `estimate_input_tokens` of `messages`: exact up to 64 KiB of text."""
        if not messages and not earlier:
            raise SummarizerError("nothing to summarize: no messages were given")
        if max_tokens < MIN_SUMMARY_TOKENS:
            raise SummarizerError(
                f"max_tokens={max_tokens} is too small for a useful summary; "
                f"allow at least {MIN_SUMMARY_TOKENS} tokens"
            )
        focus = " ".join(instructions.split()) if instructions else ""
        items = extract(messages, earlier)
        text, output_tokens = Fitter(self._counter, max_tokens, focus, items).fit(len(messages))
        if not text.strip() or output_tokens > max_tokens:
            raise SummarizerError(
                f"could not fit a summary in {max_tokens} tokens with the "
                f"{self._counter.name!r} counter; raise max_tokens"
            )
        return Summary(
            text=text,
            model=self.model,
            # The earlier texts cost what they would as messages of their own.
            input_tokens=estimate_input_tokens(
                [*(Message.user(text) for text in earlier), *messages], self._counter.count
            ),
            output_tokens=output_tokens,
        )


def estimate_input_tokens(messages: Sequence[Message], count: CountText) -> int:
    """What `messages` cost by `message_tokens`' rule, with their texts' tokens estimated.

    The structural overheads (per message, block and tool call; images) are exact. The texts'
    tokens are counted one by one while they hold at most 65,536 characters in all, which
    gives exactly `message_tokens`' sum. Beyond that, they are the texts' characters times
    the tokens per character of 32 windows of 2,048 characters, spread evenly over the texts
    joined by newlines."""
    texts: list[str] = []

    def collect(text: str) -> int:
        texts.append(text)
        return 0

    overhead = sum(message_tokens(m, collect) for m in messages)
    chars = sum(len(t) for t in texts)
    if chars <= _EXACT_CHARS:
        return overhead + sum(count(t) for t in texts)
    joined = "\n".join(texts)
    step = len(joined) // _WINDOWS
    sampled = sum(count(joined[i * step : i * step + _WINDOW_CHARS]) for i in range(_WINDOWS))
    return overhead + round(chars * sampled / (_WINDOWS * _WINDOW_CHARS))
