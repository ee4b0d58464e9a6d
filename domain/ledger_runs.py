"""What a tool output says of a test run's counts (`117 passed, 2 failed`, `Ran 42 tests`,
`Tests run: 42, Failures: 1`, `test result: ok. 42 passed; 0 failed`): the ledger's
`test-result` entries. A coding agent works from the last run's counts ("the baseline was 117
passed"); the error lines say what failed, not how many. The counts are kept as written,
without the run's duration, so two runs that ended alike are one entry."""

from __future__ import annotations

import re

TEST_WORD = re.compile(r"pass|fail|Ran |Tests run|test result", re.IGNORECASE)
"""What every count of a run holds: a cheap look before the text is searched."""
_OUTCOMES = r"passed|failed|passing|failing|errors?|skipped|xfailed|xpassed|deselected|warnings?"
TEST_COUNTS = re.compile(
    rf"(?<![\w.-])\d+ (?:{_OUTCOMES})(?:(?:[,;]| \|) \d+ (?:{_OUTCOMES}|total))*\b"
    r"|\bRan \d+ tests?\b"
    r"|\bTests run: \d+, Failures: \d+(?:, Errors: \d+)?(?:, Skipped: \d+)?"
    r"|\btest result: (?:ok|FAILED)\. \d+ passed; \d+ failed"
    r"|\b(?:OK|FAILED) \((?:failures|errors|skipped)=\d+(?:, [a-z]+=\d+)*\)"
    r"|\b\d+ (?:tests?|examples?), \d+ failures?\b"
)
"""A test run's counts as pytest, unittest, Jest, Vitest, Mocha, cargo, Maven, RSpec and
ExUnit print them."""
OUTCOME = re.compile(r"passed|failed|passing|failing|Ran |Tests run|failure|OK \(")
"""A count of errors, warnings or skipped tests alone is not a run's (`3 errors`)."""


def run_counts(text: str) -> list[str]:
    """The distinct counts of test runs a tool output reports, in order."""
    if TEST_WORD.search(text) is None:
        return []
    return list(dict.fromkeys(m for m in TEST_COUNTS.findall(text) if OUTCOME.search(m)))
