"""The shared transcripts replayed against a model that binds thinking to its prefix, with a
signed thinking block leading every reply, at 16k, 32k and 64k: no request sends a thinking
block whose prefix changed since it was produced, and every thinking block the API requires
(the open tool loop's, with thinking on) is sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from abridged.adapters.token_counters import TiktokenCounter
from abridged.adapters.transcripts import load_transcript
from tests.e2e.test_replay_transcripts import transcripts
from tests.support.bound_replay import BOUND_MODEL, replay_bound
from tests.support.counting import MemoCounter

COUNTER = MemoCounter(TiktokenCounter())


@pytest.mark.transcripts
@pytest.mark.skipif(not transcripts(), reason="the shared transcripts folder is absent")
@pytest.mark.parametrize("window", [16_000, 32_000, 64_000])
@pytest.mark.parametrize("transcript", transcripts(), ids=lambda p: p.stem)
def test_no_thinking_block_is_sent_under_a_changed_prefix(transcript: Path, window: int) -> None:
    loaded = load_transcript(transcript)
    replay = replay_bound(
        COUNTER,
        loaded.messages,
        system=loaded.system,
        tools=loaded.tools,
        window=window,
        audit=window == 32_000,
    )
    assert replay.violations == ()
    assert replay.audit_mismatches == ()
    assert replay.required_missing == 0
    assert replay.not_sent == 0
    # Thinking went back to the API (and was checked) in every session of more than one
    # request: the property is not met by sending none.
    assert replay.requests < 2 or replay.thinking_resent > 0


@pytest.mark.transcripts
@pytest.mark.skipif(not transcripts(), reason="the shared transcripts folder is absent")
def test_a_session_that_ignores_the_binding_is_refused_by_the_checker() -> None:
    """The control: the same replay, with the service told the model does not bind thinking,
    sends thinking blocks whose prefix a compaction or a prune changed."""
    loaded = load_transcript(
        next(p for p in transcripts() if p.stem.startswith("claudecode-console-bookminder-day009"))
    )
    replay = replay_bound(
        COUNTER,
        loaded.messages,
        system=loaded.system,
        tools=loaded.tools,
        window=32_000,
        capabilities={BOUND_MODEL: {"prefix_bound_thinking": False}},
    )
    assert replay.compactions > 0
    assert {v.rule for v in replay.violations} == {"thinking-prefix-changed"}
