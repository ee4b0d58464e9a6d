"""The API's on-demand compaction as a strategy `abridged simulate` compares with abridged's own.

It runs abridged (the same `Sessions` service, settings and moments as the `abridged` row)
with the summaries written the way the API's on-demand compaction returns them
(platform.claude.com/docs/en/build-with-claude/compaction-on-demand and
…/compaction-keep-recent-turns), so the two rows differ only in what a compaction sends and
costs:

- **What is sent.** The summary is a `compaction` block that leads every later request, with
  a cache breakpoint on it, and the kept turns follow verbatim
  (`abridged.domain.context.build_context`), exactly as with `ApiCompactionSummarizer`.
- **What a compaction call is billed.** The API bills the compaction request as one
  iteration of `usage.iterations`: the whole prefix it was given as input (system prompt,
  tools and the summarized messages) and the summary as output. Both are counted into the
  row's summarizer tokens.
- **The summary's text.** The API's summary cannot be had offline: the extractive
  summarizer's text stands in for it, so the facts a request keeps measure abridged's
  extraction, not the API's prose.
- **Where the API is not asked.** A range `ApiCompactionSummarizer` does not send
  (`range_refusal`: one that ends in a tool call whose results are kept, which the API
  refuses, or inside a turn of a session with thinking) gets our summarizer's summary, as
  that adapter's fallback does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from abridged.adapters.anthropic.compaction import range_refusal
from abridged.adapters.simulation.strategies import AbridgedStrategy, Body, Setup
from abridged.adapters.transcripts import Transcript
from abridged.application.ports import Summarizer, Summary, TokenCounter
from abridged.domain.messages import Message
from abridged.domain.settings import CompactionSettings
from abridged.domain.tokens import REQUEST_OVERHEAD, message_tokens, system_tokens, tools_tokens

__all__ = ["ApiCompactionStrategy", "SimulatedApiCompaction"]

SIMULATED_SIGNATURE = "simulated"
"""The signature of a simulated block (no request is sent: nothing checks it)."""


@attrs.frozen
class SimulatedApiCompaction:
    """A `Summarizer` that answers as the API's on-demand compaction would: a `compaction`
    block holding `inner`'s text, billed as the whole prefix in and the summary out.
    `prefix_tokens` are the request's tokens before its messages (overhead, system prompt,
    tools)."""

    inner: Summarizer
    counter: TokenCounter
    prefix_tokens: int
    name: str = "anthropic-compaction (simulated)"

    def summarize(self, messages: Sequence[Message], **options: Any) -> Summary:
        """`inner`'s summary of `messages` (the port's keywords pass through), as a block."""
        session_model: str | None = options.get("session_model")
        written = self.inner.summarize(messages, **options)
        if range_refusal(messages) is not None:
            return written  # the API would not be asked: our own summary stands
        block = {
            "type": "compaction",
            "content": written.text,
            "signature": SIMULATED_SIGNATURE,
            "encrypted_content": None,
        }
        prefix = self.prefix_tokens + sum(message_tokens(m, self.counter.count) for m in messages)
        output = self.counter.count(written.text)
        iteration = {"type": "compaction", "input_tokens": prefix, "output_tokens": output}
        return Summary(
            text=written.text,
            model=session_model or written.model,
            input_tokens=prefix,
            output_tokens=output,
            iterations=(json.dumps(iteration, separators=(",", ":")),),
            block=json.dumps(block, separators=(",", ":")),
        )


class ApiCompactionStrategy(AbridgedStrategy):
    """abridged with the API's on-demand compaction writing its summaries (see the module)."""

    def __init__(
        self,
        setup: Setup,
        settings: CompactionSettings | None = None,
        label: str = "api-compaction",
    ) -> None:
        super().__init__(setup, settings or CompactionSettings(), label)

    def requests(self, transcript: Transcript) -> Iterator[Body | None]:
        count = self.setup.counter.count
        prefix = (
            REQUEST_OVERHEAD
            + system_tokens(transcript.system, count)
            + tools_tokens(transcript.tools, count)
        )
        own: Callable[[TokenCounter], Summarizer] = self.setup.summarizer_factory

        def factory(counter: TokenCounter) -> Summarizer:
            return SimulatedApiCompaction(own(counter), counter, prefix)

        self.setup = attrs.evolve(self.setup, summarizer_factory=factory)
        try:
            yield from super().requests(transcript)
        finally:
            self.setup = attrs.evolve(self.setup, summarizer_factory=own)
