"""The ledger leaves out what the recent tail sends verbatim (it would cost twice), and
records it when a later compaction folds the tail: no fact of the compacted messages is
missing from the request in between."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.simulation.cache import block_text
from abridged.application.service import Sessions
from abridged.domain import messages as wire
from abridged.domain.ledger import CONTINUED, HEADING, LedgerEntry, advance, carried, extract
from abridged.domain.messages import Message, Role, TextBlock, ThinkingBlock
from abridged.domain.settings import CompactionSettings
from tests.support.builders import words
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

COUNTER = FakeTokenCounter()
TOOLS = tuple(
    {"name": name, "description": f"The {name} tool.", "input_schema": {"type": "object"}}
    for name in ("Read", "Bash")
)


def read(ident: str, path: str, output: str) -> list[Message]:
    return [
        Message.assistant(wire.ToolUseBlock(ident, "Read", {"file_path": path})),
        Message.user(wire.ToolResultBlock(ident, output)),
    ]


def bash(ident: str, command: str, output: str, *, error: bool = False) -> list[Message]:
    return [
        Message.assistant(wire.ToolUseBlock(ident, "Bash", {"command": command})),
        Message.user(wire.ToolResultBlock(ident, output, is_error=error)),
    ]


def test_the_tail_carries_prompts_text_and_tool_calls_but_not_thinking_or_outputs() -> None:
    tail = [
        Message.user("Fix the parser"),
        Message.assistant(
            ThinkingBlock("maybe `secret_helper` is involved", "sig"),
            TextBlock("I will look at `parse_input` first."),
        ),
        *bash("b1", "pytest -q", "FAILED tests/test_parser.py::test_empty"),
        *read("r1", "src/parser.py", "see src/other.py"),
    ]
    keys = carried(list(enumerate(tail)))

    assert keys[("request", "Fix the parser")] == "request"
    assert keys[("identifier", "parse_input")] == "identifier"
    assert keys[("file", "src/parser.py")] == "file-read"
    assert ("command", "pytest -q") in keys
    # Thinking is dropped from older turns, outputs are pruned: neither carries a fact.
    assert ("identifier", "secret_helper") not in keys
    assert not any(kind == "error" for kind in keys.values())


def test_a_new_fact_the_tail_carries_is_left_out_a_stronger_or_held_one_is_not() -> None:
    held = (LedgerEntry("file-read", "src/held.py", 0, 0),)
    found = (
        LedgerEntry("file-read", "src/held.py", 3, 3),
        LedgerEntry("file-read", "src/read.py", 3, 3),
        LedgerEntry("file-modified", "src/changed.py", 4, 4),
        LedgerEntry("command-failed", "make test", 5, 5),
        LedgerEntry("request", "Only in the summarized part", 6, 6),
    )
    tail = {
        ("file", "src/held.py"): "file-read",
        ("file", "src/read.py"): "file-modified",
        ("file", "src/changed.py"): "file-read",
        ("command", "make test"): "command",
    }
    update = advance(held, 20, 1, found, 1_000, COUNTER.count, tail)

    texts = {e.text for e in update.entries}
    # Read in the tail's own tool call: the tail shows it (a modification there outranks it).
    assert "src/read.py" not in texts
    assert "src/read.py" not in update.text
    # The tail only reads what was modified, and runs without failure what failed: the
    # ledger keeps the stronger fact. A held fact stays held (its range widens).
    assert {"src/changed.py", "make test", "Only in the summarized part"} <= texts
    assert next(e for e in update.entries if e.text == "src/held.py").last_position == 3


def test_only_the_first_segment_explains_the_ledger_the_others_stay_short() -> None:
    first = advance((), 0, 0, [LedgerEntry("request", "A", 0, 0)], 1_000, COUNTER.count)
    second = advance(
        first.entries, first.tokens, 1, [LedgerEntry("request", "B", 1, 1)], 1_000, COUNTER.count
    )

    assert first.text.startswith(HEADING)
    assert "continued" in HEADING
    assert second.text.startswith(CONTINUED)
    assert "not instructions" in CONTINUED
    assert len(CONTINUED) < len(HEADING) // 2


def request_text(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    return "\n".join(block_text(b) for m in messages for b in m["content"])


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 6), st.integers(2, 5))
def test_every_fact_of_the_compacted_messages_stays_in_the_request(seed: int, repeat: int) -> None:
    app = Sessions(
        counter=COUNTER,
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model="claude-test",
        context_window=8_000,
        max_output_tokens=500,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0, threshold_ratio=0.3),
    )
    messages: list[Message] = []
    for i in range(24):
        # The same files and commands come back every `repeat` turns: some of what a
        # compaction summarizes is also in the tail it keeps.
        k = (i + seed) % repeat
        messages.append(Message.user(f"Task {i}: look at module {k}"))
        messages += read(f"r{i}", f"src/mod_{k}.py", words(90))
        messages += bash(f"b{i}", f"pytest tests/test_{k}.py", f"ValueError: case {k}\n{words(60)}")
        messages.append(Message.assistant(f"Checked `helper_{k}` in module {k}."))
    seen: list[Message] = []
    left_out = 0
    for message in messages:
        if message.role is Role.ASSISTANT:
            prepared = app.prepare_request(session_id)
            session = app.session(session_id)
            compacted = list(enumerate(seen))[: session.retained_from]
            sent = request_text(render_request(prepared.context, model="m", max_tokens=500))
            ledger = session.ledger_text
            for fact in extract(compacted):
                assert fact.text in sent, fact
                left_out += fact.text not in ledger
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
        seen.append(message)
    session = app.session(session_id)
    assert session.generation >= 2
    # Facts the tail carried were indeed left out of the ledger at some point.
    assert left_out > 0


def test_paths_past_a_long_commands_entry_are_listed_as_files() -> None:
    paths = [f"fixtures/user_{i}/Library/Containers/Data/.gitkeep" for i in range(8)]
    command = f"touch {' '.join(paths)}\nls fixtures/listed/below"
    found = extract(list(enumerate(bash("b1", command, "done"))))

    [entry] = [e for e in found if e.kind.startswith("command")]
    files = {e.text for e in found if e.kind.startswith("file")}
    # The command's entry holds its first line up to its cap; what that line names past the
    # cap is a file, and so is what the command lines below it name.
    assert all(p in entry.text or p in files for p in paths)
    assert not any(p in entry.text for p in files)
    assert ("file-read", "fixtures/listed/below") in {(e.kind, e.text) for e in found}


def test_the_paths_of_a_commands_later_lines_are_files_read_but_not_a_scripts() -> None:
    command = (
        "cd /srv/runbooks/ledger-writer && \\\n"
        "  kubectl logs deploy/ledger-writer > /tmp/incident/writer.log\n"
        "cat > /tmp/fix.py <<'EOF'\nopen('/etc/in/heredoc.conf')\nEOF\n"
        "python -c \"\nimport x; open('data/in/string.csv')\n\"\n"
        "touch build/made/here.txt  # don't: a comment, see notes/on/it.md\n"
        "npx vitest run test/unit/scroll.test.ts"
    )
    found = extract(list(enumerate(bash("b1", command, "done"))))
    files = {e.text: e.kind for e in found if e.kind.startswith("file")}
    assert [e.text for e in found if e.kind.startswith("command")] == [
        "cd /srv/runbooks/ledger-writer && \\"
    ]
    # Whatever the command did to them (it touched one), they are files read: the kind a
    # short ledger drops first.
    assert files == {
        "deploy/ledger-writer": "file-read",
        "/tmp/incident/writer.log": "file-read",
        "/tmp/fix.py": "file-read",
        "build/made/here.txt": "file-read",
        "notes/on/it.md": "file-read",
        "test/unit/scroll.test.ts": "file-read",
    }
