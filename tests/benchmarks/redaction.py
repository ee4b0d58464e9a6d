"""Speed of redacting what a compaction derives: one message whose tool input holds 40,000
short strings, and the shared transcripts message by message, each string redacted with all
the default patterns ("each string") and with the patterns narrowed to those that may match
one of the message's strings ("narrowed", what the service does).

Run with `python -m tests.benchmarks.redaction` (or `make bench`); prints the best of three
runs in milliseconds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence

from abridged.application.redaction import DefaultRedactor, redact_each
from abridged.domain.messages import Message, ToolUseBlock
from abridged.domain.redaction import redact_message
from tests.conftest import TRANSCRIPTS

RUNS = 3
REDACTOR = DefaultRedactor()


def best_ms(run: Callable[[], object]) -> float:
    timings = []
    for _ in range(RUNS):
        started = time.perf_counter()
        run()
        timings.append(time.perf_counter() - started)
    return min(timings) * 1000


def rows_input() -> Message:
    """10,000 rows of 4 values: names, addresses, states; no word a pattern looks for."""
    rows = [
        {
            "id": f"r{i:05d}",
            "name": f"user {i}",
            "email": f"user{i}@example.com",
            "status": "active" if i % 3 else "disabled",
        }
        for i in range(10_000)
    ]
    call = ToolUseBlock("toolu_rows", "bulk_insert", {"table": "users", "rows": rows})
    return Message.assistant("Loading the users.", call)


def mixed_input() -> Message:
    """10,000 entries of 4 values holding the words many patterns look for (`token`, `key`,
    `pass`, `login`, `value`, `-u`, a URL, an `Authorization` pair): most are kept, only the
    prefixed tokens' patterns go."""
    entries = [
        {
            "key": f"settings.token_count_{i}",
            "value": f"Do not pass -u to login {i}; see https://example.com/docs?page={i}",
            "headers": [{"name": "Authorization", "value": f"see vault entry {i}"}][: i % 2],
            "note": f"the password field {i} is required; mysql cookie secret AWS",
        }
        for i in range(10_000)
    ]
    call = ToolUseBlock("toolu_mixed", "apply_settings", {"entries": entries})
    return Message.assistant("Applying the settings.", call)


def transcript_messages() -> list[Message]:
    paths = sorted(TRANSCRIPTS.glob("*.jsonl")) if TRANSCRIPTS.is_dir() else []
    return [
        Message.from_wire(json.loads(line))
        for path in paths
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def compare(label: str, messages: Sequence[Message]) -> None:
    each = [redact_message(m, REDACTOR.redact) for m in messages]
    narrowed = [redact_each(REDACTOR, m) for m in messages]
    assert each == narrowed, label
    before = best_ms(lambda: [redact_message(m, REDACTOR.redact) for m in messages])
    after = best_ms(lambda: [redact_each(REDACTOR, m) for m in messages])
    print(
        f"redaction, {label}: each string {before:8.1f} ms, narrowed {after:8.1f} ms "
        f"(best of {RUNS})"
    )


def main() -> None:
    compare("40,000 values without hints", [rows_input()])
    compare("40,000 values with hints   ", [mixed_input()])
    messages = transcript_messages()
    if messages:
        compare(f"{len(messages)} transcript messages", messages)
    else:
        print(f"redaction, transcripts: skipped, none at {TRANSCRIPTS}")


if __name__ == "__main__":
    main()
