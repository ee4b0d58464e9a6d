"""The facts ledger: what it records, how it merges and bounds, and that it survives
compactions with every dropped entry said by an event."""

from __future__ import annotations

from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.application.service import Sessions
from abridged.domain.ledger import (
    KINDS,
    PRIORITY,
    LedgerEntry,
    LedgerUpdate,
    bounded,
    extract,
    merge,
    render_ledger,
)
from abridged.domain.messages import Message, ToolResultBlock, ToolUseBlock
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import feed
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

COUNTER = FakeTokenCounter()
ALL_TOOLS = (
    *TOOLS,
    *(
        {"name": name, "description": f"The {name} tool.", "input_schema": {"type": "object"}}
        for name in ("Read", "Edit", "Bash")
    ),
)


def call(name: str, **inputs: str) -> tuple[str, Message]:
    ident = f"toolu_{name}_{abs(hash(tuple(inputs.items()))) % 10**8}"
    return ident, Message.assistant(ToolUseBlock(ident, name, dict(inputs)))


def result(ident: str, text: str, *, error: bool = False) -> Message:
    return Message.user(ToolResultBlock(ident, text, is_error=error))


def coding_session() -> list[Message]:
    read_id, read = call("Read", file_path="src/app/parser.py")
    edit_id, edit = call("Edit", file_path="src/app/parser.py", old_string="a", new_string="b")
    test_id, test = call("Bash", command="pytest tests/test_parser.py -q\necho done")
    ls_id, ls = call("Bash", command="ls src/app")
    return [
        Message.user("Fix the parser crash on empty input.\nIt started after the refactor."),
        read,
        result(read_id, "def parse(text):\n    return text[0]\n"),
        test,
        result(
            test_id,
            "collected 3 items\nFAILED tests/test_parser.py::test_empty - IndexError\n"
            "E   IndexError: string index out of range\n1 failed, 2 passed",
        ),
        edit,
        result(edit_id, "The file src/app/parser.py has been updated."),
        ls,
        result(ls_id, "parser.py\n__init__.py"),
        Message.assistant("Fixed: parse now handles empty input."),
    ]


def test_the_ledger_records_requests_files_commands_and_errors_verbatim_with_ranges() -> None:
    entries = {(e.kind, e.text): e for e in extract(list(enumerate(coding_session())))}

    request = entries["request", "Fix the parser crash on empty input."]
    assert (request.first_position, request.last_position) == (0, 0)
    # Read first, edited later: one entry, modified, spanning both calls.
    parser = entries["file-modified", "src/app/parser.py"]
    assert (parser.first_position, parser.last_position) == (1, 5)
    assert ("file-read", "src/app/parser.py") not in entries
    # A command's first line; marked failed because its output reports failures.
    assert ("command-failed", "pytest tests/test_parser.py -q") in entries
    assert ("command", "ls src/app") in entries
    assert ("error", "E   IndexError: string index out of range") in entries
    assert ("error", "FAILED tests/test_parser.py::test_empty - IndexError") in entries
    # File content passed to a tool is not taken for paths.
    assert all(e.text not in {"a", "b"} for e in entries.values())


def test_rendering_names_each_entry_with_its_messages_and_marks_failures() -> None:
    text = render_ledger(extract(list(enumerate(coding_session()))))

    assert "m1 Fix the parser crash on empty input." in text
    assert "m2-6 src/app/parser.py" in text
    assert "m4 ✗ pytest tests/test_parser.py -q" in text
    assert text.index("User requests:") < text.index("Files modified") < text.index("Commands")
    assert render_ledger(()) == ""


def test_merging_widens_ranges_and_never_downgrades_a_fact() -> None:
    first = (
        LedgerEntry("file-modified", "a.py", 3, 3),
        LedgerEntry("command-failed", "make", 4, 4),
    )
    later = (
        LedgerEntry("file-read", "a.py", 20, 20),
        LedgerEntry("command", "make", 22, 22),
        LedgerEntry("error", "error: boom", 23, 23),
    )

    merged = {e.text: e for e in merge(first, later)}

    assert merged["a.py"] == LedgerEntry("file-modified", "a.py", 3, 20)
    assert merged["make"] == LedgerEntry("command-failed", "make", 4, 22)
    assert merged["error: boom"].first_position == 23


def test_a_short_budget_drops_files_read_before_failures_modified_files_and_requests() -> None:
    entries = (
        LedgerEntry("request", "Add the export command.", 0, 0),
        LedgerEntry("file-read", "docs/old_notes.md", 2, 2),
        LedgerEntry("file-read", "docs/notes.md", 9, 9),
        LedgerEntry("command", "git status", 5, 5),
        LedgerEntry("command-failed", "make test", 7, 7),
        LedgerEntry("file-modified", "src/export.py", 8, 8),
    )
    full = COUNTER.count(render_ledger(entries))
    dropped_one_read = COUNTER.count(render_ledger(entries[:1] + entries[2:]))

    kept, dropped = bounded(entries, dropped_one_read, COUNTER.count)

    # The oldest file read goes first.
    assert dropped == (entries[1],)
    assert dropped_one_read < full
    kept, dropped = bounded(entries, COUNTER.count(render_ledger(entries[:1])), COUNTER.count)
    assert kept == entries[:1]


entry_strategy = st.builds(
    LedgerEntry,
    kind=st.sampled_from(KINDS),
    text=st.text(alphabet="abcdefgh/._ ", min_size=1, max_size=30).map(str.strip).filter(bool),
    first_position=st.integers(0, 50),
    last_position=st.integers(50, 100),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(entry_strategy, max_size=40), st.integers(0, 400))
def test_bounding_fits_loses_nothing_unsaid_keeps_priority_and_is_deterministic(
    raw: list[LedgerEntry], budget: int
) -> None:
    entries = merge((), raw)

    kept, dropped = bounded(entries, budget, COUNTER.count)

    assert not kept or COUNTER.count(render_ledger(kept)) <= budget
    assert sorted(map(repr, kept + dropped)) == sorted(map(repr, entries))
    assert (kept, dropped) == bounded(entries, budget, COUNTER.count)
    for gone in dropped:
        for stays in kept:
            assert (PRIORITY[gone.kind], gone.last_position) <= (
                PRIORITY[stays.kind],
                stays.last_position,
            )


def start(app: Sessions, window: int, **overrides: object) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=window,
        max_output_tokens=500,
        system="You are a careful coding agent.",
        tools=ALL_TOOLS,
        settings=CompactionSettings(**{"threshold_floor_tokens": 0, **overrides}),  # type: ignore[arg-type]
    )


def test_the_ledger_is_carried_across_compactions_and_shown_after_the_summary(
    app: Sessions,
) -> None:
    session_id = start(app, 3_000)
    messages = [m for i in range(30) for m in turn(f"Request number {i}", [words(120)])]
    feed(app, session_id, messages, COUNTER)
    session = app.session(session_id)
    updates = [e for e in app.history(session_id) if isinstance(e, Session.LedgerUpdated)]

    assert session.generation >= 2
    assert len(updates) == session.generation
    # The first request was summarized by the first compaction and is still there.
    assert "m1 Request number 0" in session.ledger_text
    assert any(e.text == "Request number 0" for e in session.ledger)
    prepared_first = app.session(session_id)
    assert prepared_first.ledger_tokens == updates[-1].tokens


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 9), st.floats(0.02, 0.2))
def test_no_ledger_entry_disappears_without_an_event_naming_it(seed: int, share: float) -> None:
    app = Sessions(
        counter=COUNTER,
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = start(app, 3_000, ledger_share=share)
    messages: list[Message] = []
    for i in range(14):
        prompt = f"Task {seed}-{i}: change module_{i}.py"
        ident, edit = call("Edit", file_path=f"pkg/module_{i}_{seed}.py", new_string="x")
        messages += [
            Message.user(prompt),
            edit,
            result(ident, f"error: cannot edit pkg/module_{i}.py line {i}", error=i % 3 == 0),
            Message.assistant(words(60)),
        ]
    feed(app, session_id, messages, COUNTER)
    held: dict[tuple[str, str], LedgerEntry] = {}
    limit = int(share * 2_500)
    for event in app.history(session_id):
        if isinstance(event, Session.LedgerUpdated):
            now = {e.key for e in event.entries}
            said = {e.key for e in event.dropped}
            assert set(held) - now <= said
            assert event.tokens <= limit
            held = {e.key: e for e in event.entries}
    assert held, "the ledger should hold something after the compactions"


def test_an_update_that_loses_an_entry_silently_is_refused(app: Sessions) -> None:
    session_id = start(app, 4_000)
    feed(app, session_id, [m for i in range(12) for m in turn(f"Ask {i}", [words(150)])], COUNTER)
    session = app.session(session_id)
    assert session.ledger

    with pytest.raises(ValueError, match="without being recorded"):
        session.update_ledger(LedgerUpdate((), "", 0, ()))
    assert not session.pending_events
