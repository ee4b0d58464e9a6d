"""A small window crowded by a full facts ledger and a turn of large outputs.

A coding session at 16k fills its ledger (at most 6,000 tokens with `ledger_share=0.5`) with
paths, commands and errors, then comes to turns whose tool outputs alone take most of the
budget. The request must
still be built: the compaction keeps the current exchange, gives the ledger what is left and
records the entries it drops, rather than refusing to send anything.
"""

from __future__ import annotations

from pathlib import Path

from abridged.adapters.summarizers.extractive import ExtractiveSummarizer
from abridged.adapters.token_counters import default_token_counter
from abridged.adapters.transcripts import load_transcript
from abridged.application.service import Sessions
from abridged.domain.messages import Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.checks import check_request
from tests.support.generated_sessions import parallel_coding_records, write_records

MESSAGES = 880
"""Enough of the generated session to pass the two turns that used to overflow (805, 865)."""


def test_a_full_ledger_gives_way_to_the_current_exchange(tmp_path: Path) -> None:
    records = parallel_coding_records(seed=2, tasks=90)[:MESSAGES]
    transcript = load_transcript(write_records(records, tmp_path / "coding.jsonl"))
    counter = default_token_counter()
    app = Sessions(
        counter=counter,
        summarizer=ExtractiveSummarizer(counter),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model="claude-sonnet-4-5",  # thinking not bound: the ledger, not the loop, decides
        context_window=16_000,
        max_output_tokens=4_000,
        system=transcript.system,
        tools=transcript.tools,
        # The ledger's largest share, so that it fills while large outputs come in.
        settings=CompactionSettings(ledger_share=0.5),
    )
    for message in transcript.messages:
        if message.role is Role.ASSISTANT:
            check_request(app.prepare_request(session_id), counter)
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)

    history = app.history(session_id)
    held = 0
    shrunk = 0
    for k, event in enumerate(history):
        if isinstance(event, Session.LedgerUpdated):
            held = event.tokens
        if not isinstance(event, Session.CompactionThresholdHit):
            continue
        room = event.decision.ledger_max_tokens
        update = next(e for e in history[k:] if isinstance(e, Session.LedgerUpdated))
        assert update.tokens <= room
        if room < held:
            # The ledger gave way to the tail, naming what it dropped.
            shrunk += 1
            assert update.dropped
    assert shrunk, "the session should reach a turn that fits only beside a smaller ledger"
