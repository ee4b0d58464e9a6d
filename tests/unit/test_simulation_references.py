"""The references `simulate` compares abridged with summarize the way abridged's own
summaries are folded: the previous summary is given as the summary it is, never as a user's
request, so that a long session's task survives every compaction of the reference too."""

from __future__ import annotations

import json
import re

from abridged.adapters.simulation.strategies import ClaudeCodeStyle, LangChainStyle, Setup
from abridged.adapters.summarizers.extractive import ExtractiveSummarizer
from abridged.adapters.token_counters import default_token_counter
from abridged.adapters.transcripts import Transcript
from abridged.domain.messages import Message

TASK = "Port the billing service to Rust; keep `invoice_total` and restore.sh's `--dry-run` flag."


def long_session(turns: int) -> Transcript:
    messages = [Message.user(TASK), Message.assistant("Starting with the invoice module.")]
    for turn in range(turns):
        messages += [
            Message.user(f"Step {turn}: run the tests again and tell me what fails. " + "x " * 120),
            Message.assistant(f"Step {turn} ran; all tests passed. " + "y " * 120),
        ]
    return Transcript(tuple(messages), "You are a coding agent.", (), None, "generated")


def summaries(body: dict[str, object]) -> str:
    return json.dumps(body["messages"])


def test_the_references_keep_the_task_through_many_compactions() -> None:
    counter = default_token_counter()
    setup = Setup(8_000, 1_000, counter, ExtractiveSummarizer)
    for strategy in (LangChainStyle(setup), ClaudeCodeStyle(setup)):
        bodies = [b for b in strategy.requests(long_session(120)) if b is not None]

        assert strategy.counters.compactions >= 5
        last = summaries(bodies[-1])
        # The previous summary was folded in as a summary: the task is still named, once,
        # and the summary does not quote itself one level deeper at every compaction.
        assert "invoice_total" in last
        assert "--dry-run" in last
        assert len(re.findall(r"User requests", last)) <= 1
