"""A test run's counts, read from tool outputs: the ledger's `test-result` entries and
`simulate`'s `tests` kind (each written on its own, so that the measure does not move with
the ledger)."""

from __future__ import annotations

import pytest

from abridged.adapters.cli.simulate import KIND_LABELS
from abridged.adapters.simulation.facts import extract_facts
from abridged.domain.ledger import extract, render_ledger
from abridged.domain.ledger_runs import run_counts
from abridged.domain.messages import Message, Role, TextBlock, ToolResultBlock, ToolUseBlock

RUNS = [
    ("===== 117 passed, 2 warnings in 3.21s =====", "117 passed, 2 warnings"),
    ("==== 2 failed, 40 passed, 1 skipped in 12.04s ====", "2 failed, 40 passed, 1 skipped"),
    ("Ran 42 tests in 0.123s", "Ran 42 tests"),
    ("FAILED (failures=2, errors=1)", "FAILED (failures=2, errors=1)"),
    ("Tests:       2 failed, 40 passed, 42 total", "2 failed, 40 passed, 42 total"),
    ("test result: ok. 42 passed; 0 failed; 0 ignored", "test result: ok. 42 passed; 0 failed"),
    ("  12 passing (30ms)", "12 passing"),
    ("      Tests  2 failed | 40 passed (42)", "2 failed | 40 passed"),
    (
        "Tests run: 42, Failures: 1, Errors: 0, Skipped: 2",
        "Tests run: 42, Failures: 1, Errors: 0, Skipped: 2",
    ),
    ("43 tests, 0 failures", "43 tests, 0 failures"),
    ("42 examples, 3 failures", "42 examples, 3 failures"),
]


@pytest.mark.parametrize(("line", "counts"), RUNS, ids=[counts for _, counts in RUNS])
def test_a_runners_counts_are_read_without_the_runs_duration(line: str, counts: str) -> None:
    output = f"collected 3 items\n\ntests/test_app.py ..F\n{line}\n"
    assert run_counts(output) == [counts]
    facts = [f.text for f in extract_facts(_run(output)) if f.kind == "tests"]
    assert facts == [counts]


@pytest.mark.parametrize(
    "text",
    ["3 errors", "1 warning", "5 skipped", "The migration passed.", "v1.2 passed review"],
)
def test_what_is_not_a_runs_counts(text: str) -> None:
    assert run_counts(text) == []
    assert not [f for f in extract_facts(_run(text)) if f.kind == "tests"]


def test_runs_that_ended_alike_are_one_entry_with_both_positions() -> None:
    first = _run("===== 117 passed in 3.21s =====", call_id="toolu_1")
    second = _run("===== 117 passed in 2.98s =====", call_id="toolu_2")
    messages = [*first, *second[1:]]

    entries = [e for e in extract(list(enumerate(messages))) if e.kind == "test-result"]

    assert [(e.text, e.first_position, e.last_position, e.source) for e in entries] == [
        ("117 passed", 2, 4, "bash")
    ]
    assert "Test runs, quoted from tool outputs:\nm3-5 [bash] 117 passed" in render_ledger(entries)


def test_the_kind_has_a_label_in_simulates_table() -> None:
    assert KIND_LABELS["tests"] == "test"


def _run(output: str, call_id: str = "toolu_1") -> list[Message]:
    call = ToolUseBlock(call_id, "bash", {"command": "pytest -q"})
    return [
        Message(Role.USER, (TextBlock("Run the tests."),)),
        Message(Role.ASSISTANT, (call,)),
        Message(Role.USER, (ToolResultBlock(call_id, output),)),
    ]
