"""`abridged simulate --references api-compaction`: the API's on-demand compaction modelled
next to abridged's own: the same moments, the block leading every later request with the
kept turns verbatim after it, each compaction billed as the whole prefix in and the summary
out, and a range the API would refuse left to our own summarizer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from abridged.adapters.cli import main
from abridged.adapters.simulation import AbridgedStrategy, Setup
from abridged.adapters.simulation.api_compaction import (
    ApiCompactionStrategy,
    SimulatedApiCompaction,
)
from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.transcripts import Transcript, load_transcript
from abridged.domain.messages import Message
from abridged.domain.settings import CompactionSettings
from abridged.domain.tokens import message_tokens
from tests.support.anthropic_rules import assert_valid_request
from tests.support.builders import exchange, words
from tests.support.fakes import FakeTokenCounter
from tests.support.generated_sessions import coding_session, write_jsonl

COUNTER = FakeTokenCounter()
SETUP = Setup(16_000, 2_000, COUNTER, ExtractiveSummarizer)


def test_a_compaction_is_a_block_billed_as_the_whole_prefix_and_the_summary() -> None:
    summarizer = SimulatedApiCompaction(ExtractiveSummarizer(COUNTER), COUNTER, prefix_tokens=40)
    messages = [Message.user(f"Fix the exporter. {words(50)}"), Message.assistant("Fixed it.")]

    summary = summarizer.summarize(messages, max_tokens=300)

    block = json.loads(summary.block or "null")
    assert block["type"] == "compaction"
    assert block["content"] == summary.text
    assert summary.input_tokens == 40 + sum(message_tokens(m, COUNTER.count) for m in messages)
    assert summary.output_tokens == COUNTER.count(summary.text)
    (iteration,) = map(json.loads, summary.iterations)
    assert iteration == {
        "type": "compaction",
        "input_tokens": summary.input_tokens,
        "output_tokens": summary.output_tokens,
    }


def test_a_range_the_api_would_refuse_gets_our_own_summary() -> None:
    summarizer = SimulatedApiCompaction(ExtractiveSummarizer(COUNTER), COUNTER, prefix_tokens=40)
    call, _ = exchange(["ok"])

    summary = summarizer.summarize([Message.user("Run it."), call], max_tokens=300)

    assert summary.block is None


def transcript(folder: Path) -> Transcript:
    return load_transcript(write_jsonl(coding_session(seed=3), folder / "coding.jsonl"))


def test_later_requests_lead_with_the_block_at_the_same_moments_as_ours(tmp_path: Path) -> None:
    ours = AbridgedStrategy(SETUP, CompactionSettings(), "abridged")
    api = ApiCompactionStrategy(SETUP)
    session = transcript(tmp_path)

    our_bodies = list(ours.requests(session))
    api_bodies = list(api.requests(session))

    assert api.counters.compactions == ours.counters.compactions > 0
    assert len(api_bodies) == len(our_bodies)
    led = [b for b in api_bodies if b and b["messages"][0]["content"][0]["type"] == "compaction"]
    assert led
    for body in led:
        assert_valid_request(body)
        assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert not [b for b in our_bodies if b and "compaction" in json.dumps(b["messages"][0])]
    assert api.counters.summarizer_input_tokens > 0


def test_simulate_lists_it_on_request(tmp_path: Path) -> None:
    path = write_jsonl(coding_session(seed=3), tmp_path / "coding.jsonl")

    result = CliRunner().invoke(
        main,
        ["simulate", str(path), "--window", "16000", "--references", "api-compaction", "--json"],
    )

    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    assert [o["strategy"] for o in document["outcomes"]] == ["abridged", "api-compaction"]
