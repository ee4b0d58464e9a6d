"""Rules 2 of salient lines: log lines at an error level, the exception that ends a traceback
whatever its name, pytest's `E` lines. Sessions stored before keep rules 1, so that every view
rebuilt from their events is what was shown."""

from __future__ import annotations

from typing import Any

import pytest

from abridged.application.transcodings import AttrsTranscoding
from abridged.domain.messages import Message, ToolResultBlock
from abridged.domain.pruning import head_tail
from abridged.domain.salience import LATEST_RULES, salient_lines
from abridged.domain.settings import CompactionSettings
from abridged.domain.truncation import Truncation, shown, truncate_text

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


def test_new_sessions_take_the_latest_rules_and_sessions_stored_before_keep_theirs() -> None:
    stored: dict[str, Any] = CompactionSettings().to_dict()
    del stored["salient_rules"]

    assert CompactionSettings().salient_rules == LATEST_RULES == 3
    assert CompactionSettings.from_stored(stored).salient_rules == 1
    # A session stored with rules 2 (every session started before rules 3) keeps them.
    assert CompactionSettings.from_stored({**stored, "salient_rules": 2}).salient_rules == 2
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


LOG_LINES = "\n".join(
    f"[{n:03d}] /Users/runner/work/wallet-mobile/ios/Widget{n}.swift:19:9: error: static "
    "property 'shared' is not concurrency-safe"
    for n in range(80)
)


@pytest.mark.parametrize(("head", "tail"), [(1_000, 1_000), (2_345, 777), (150, 4_000)])
def test_rules_3_cut_a_head_and_a_tail_at_line_ends(head: int, tail: int) -> None:
    shown_3 = truncate_text(LOG_LINES, head, tail, 400, 3)
    shown_2 = truncate_text(LOG_LINES, head, tail, 400, 2)
    lines = set(LOG_LINES.splitlines())
    first, _, rest = shown_3.partition("\n\n[… ")
    last = rest.rpartition("]\n\n")[2]
    # Every line shown in the head and the tail is a whole line of the output, and nothing
    # is shown that rules 2 would not fit: the cut only moves in.
    assert set(first.splitlines()) <= lines
    assert set(last.splitlines()) <= lines
    assert len(first) <= head
    assert len(last) <= tail
    assert len(shown_3) <= len(shown_2) + 24  # the marker's count may take more digits
    # Rules 2 cut inside a line at both ends.
    assert not set(shown_2.partition("\n\n[… ")[0].splitlines()) <= lines
