"""Rules 2 of salient lines: log lines at an error level, the exception that ends a traceback
whatever its name, pytest's `E` lines. Sessions stored before keep rules 1, so that every view
rebuilt from their events is what was shown."""

from __future__ import annotations

from typing import Any

from abridged.application.transcodings import AttrsTranscoding
from abridged.domain.messages import Message, ToolResultBlock
from abridged.domain.pruning import head_tail
from abridged.domain.salience import LATEST_RULES, salient_lines
from abridged.domain.settings import CompactionSettings
from abridged.domain.truncation import Truncation, shown

WORKER_LOG = "\n".join(
    [
        *(f"2026-11-19 03:04:{k:02d},000 INFO  [fx-rates] job-{k} picked" for k in range(40)),
        "2026-11-19 03:05:00,114 ERROR [payments-worker] job-719658 failed",
        "Traceback (most recent call last):",
        '  File "/srv/payments/worker/settle.py", line 141, in settle_batch',
        "    cur.execute(UPDATE_BALANCE, params)",
        "psycopg.errors.SerializationFailure: could not serialize access",
        "ts=2026-11-19T03:05:01 level=error msg=retry budget exhausted",
        "E   assert settled == 3",
        "INFO an error counter was reset; error_count=0",
        *(f"2026-11-19 03:06:{k:02d},000 INFO  [notifier] job-{k} picked" for k in range(40)),
    ]
)


def test_rules_2_keep_log_errors_the_raised_exception_and_pytest_lines() -> None:
    lines = salient_lines(WORKER_LOG, 2_000, LATEST_RULES)

    assert lines == [
        "2026-11-19 03:05:00,114 ERROR [payments-worker] job-719658 failed",
        "Traceback (most recent call last):",
        'File "/srv/payments/worker/settle.py", line 141, in settle_batch',
        "psycopg.errors.SerializationFailure: could not serialize access",
        "ts=2026-11-19T03:05:01 level=error msg=retry budget exhausted",
        "E   assert settled == 3",
    ]


def test_rules_1_choose_as_they_did() -> None:
    assert salient_lines(WORKER_LOG, 2_000, 1) == [
        "Traceback (most recent call last):",
        'File "/srv/payments/worker/settle.py", line 141, in settle_batch',
    ]
    assert salient_lines(WORKER_LOG, 2_000) == salient_lines(WORKER_LOG, 2_000, 1)


def test_new_sessions_take_rules_2_and_sessions_stored_before_keep_rules_1() -> None:
    stored: dict[str, Any] = CompactionSettings().to_dict()
    del stored["salient_rules"]

    assert CompactionSettings().salient_rules == LATEST_RULES == 2
    assert CompactionSettings.from_stored(stored).salient_rules == 1
    # The fingerprint of a stored session's settings does not move.
    assert (
        CompactionSettings.from_stored(stored).fingerprint
        == CompactionSettings(salient_rules=1).fingerprint
    )


def test_a_truncation_stored_before_rules_2_is_shown_as_it_was() -> None:
    message = Message.user(ToolResultBlock("toolu_1", WORKER_LOG))
    stored = {"block_index": 0, "head_chars": 200, "tail_chars": 200, "salient_chars": 600}
    truncation = AttrsTranscoding(Truncation, "truncation").decode(dict(stored))

    text = shown(message, (truncation,)).content[0]

    assert truncation.salient_rules == 1
    assert isinstance(text, ToolResultBlock)
    assert "SerializationFailure" not in text.text
    assert "Traceback (most recent call last):" in text.text
    new = shown(message, (Truncation(0, 200, 200, 600, LATEST_RULES),)).content[0]
    assert isinstance(new, ToolResultBlock)
    assert "psycopg.errors.SerializationFailure: could not serialize access" in new.text


def test_a_prune_shows_by_the_sessions_rules() -> None:
    old = head_tail(WORKER_LOG, 200, 200, 600, 1)
    new = head_tail(WORKER_LOG, 200, 200, 600, 2)

    assert "SerializationFailure" not in old
    assert "ERROR [payments-worker] job-719658 failed" in new
