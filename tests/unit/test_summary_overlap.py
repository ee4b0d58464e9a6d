"""A new summary chunk leaves out the lines the facts ledger quotes verbatim: both are sent
with every request, so a line in both was read twice."""

from __future__ import annotations

from uuid import UUID

from abridged.application.service import Sessions
from abridged.domain.framing import fenced
from abridged.domain.ledger import ALL_IN_LEDGER, LedgerEntry, unrepeated
from abridged.domain.messages import Message, ToolResultBlock, ToolUseBlock
from abridged.domain.settings import CompactionSettings
from tests.support.builders import words
from tests.support.fakes import FakeTokenCounter

COUNTER = FakeTokenCounter()

ENTRIES = (
    LedgerEntry("request", "Fix the parser", 0, 0),
    LedgerEntry("request", "Two lines\nof a prompt", 4, 4),
    LedgerEntry("error", "ValueError: empty input", 2, 2, "Bash"),
)


def test_lines_the_ledger_quotes_leave_the_summary_and_the_rest_stays() -> None:
    summary = "\n".join(
        [
            "## User requests",
            "- Fix the parser",
            fenced("Two lines\nof a prompt"),
            "",
            "## Errors",
            "- Bash (failed): ValueError: empty input",
            "",
            "## Decisions",
            "- Fix the parser first, then the tests",
            "- Said: ValueError: empty input",
            "- web_fetch: ValueError: empty input",
        ]
    )

    assert unrepeated(summary, ENTRIES) == "\n".join(
        [
            "## Decisions",
            "- Fix the parser first, then the tests",
            # Prose that quotes a fact is not a repeat, nor a line naming another tool.
            "- Said: ValueError: empty input",
            "- web_fetch: ValueError: empty input",
        ]
    )


def test_what_the_ledger_drops_first_stays_in_the_summary_too() -> None:
    entries = (
        LedgerEntry("file-read", "src/read.py", 1, 1),
        LedgerEntry("command", "make test", 2, 2),
        LedgerEntry("file-modified", "src/changed.py", 3, 3),
    )
    summary = "## Files\n- src/read.py\n- src/changed.py\n\n## Commands\n- make test"

    # A short ledger drops files read and commands first: the summary's copy then remains.
    assert unrepeated(summary, entries) == "## Files\n- src/read.py\n\n## Commands\n- make test"


def test_a_summary_that_only_repeats_the_ledger_says_so_in_one_line() -> None:
    assert unrepeated("## User requests\n- Fix the parser", ENTRIES) == ALL_IN_LEDGER
    assert unrepeated("A prose summary.", ENTRIES) == "A prose summary."


def start(app: Sessions) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=6_000,
        max_output_tokens=500,
        system="You are a careful coding agent.",
        tools=({"name": "Bash", "description": "Runs.", "input_schema": {"type": "object"}},),
        settings=CompactionSettings(threshold_floor_tokens=0, threshold_ratio=0.3),
    )


def test_a_compaction_stores_its_chunk_without_what_the_ledger_quotes() -> None:
    from abridged.adapters.summarizers import ExtractiveSummarizer

    app = Sessions(
        counter=COUNTER,
        summarizer=ExtractiveSummarizer(COUNTER),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = start(app)
    for i in range(12):
        app.append_message(session_id, Message.user(f"Please handle case {i} now"))
        app.prepare_request(session_id)
        app.record_reply(
            session_id, Message.assistant(ToolUseBlock(f"t{i}", "Bash", {"command": f"run {i}"}))
        )
        app.append_message(
            session_id,
            Message.user(ToolResultBlock(f"t{i}", f"error: case {i} failed\n{words(150)}")),
        )
        app.prepare_request(session_id)
        app.record_reply(session_id, Message.assistant(f"Handled case {i}."))
    session = app.session(session_id)

    assert session.generation >= 1
    quoted = {e.text for e in session.ledger}
    for chunk in session.summaries:
        lines = set(chunk.text.splitlines())
        assert not {f"- {text}" for text in quoted} & lines
        # The stored count is the chunk as a request shows it.
        assert chunk.tokens > 0
    # The prompts the chunks no longer list are in the ledger, verbatim.
    assert "Please handle case 0 now" in quoted
