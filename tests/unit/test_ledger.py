"""The facts ledger: what it records, how it merges and bounds, and that it survives
compactions with every dropped entry said by an event."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.simulation.cache import PromptCache, request_blocks
from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from abridged.domain import cuts, planner
from abridged.domain.ledger import (
    CONSOLIDATION_SLACK,
    CONTINUED,
    HEADING,
    KEPT_SHARE_PER_KIND,
    KINDS,
    MAX_SEGMENTS,
    PRIORITY,
    RECENT_PER_KIND,
    REQUEST_CHARS,
    VALUE_BASE,
    LedgerEntry,
    LedgerUpdate,
    advance,
    bounded,
    check_update,
    consolidate,
    extract,
    merge,
    render_ledger,
    render_line,
)
from abridged.domain.messages import (
    Message,
    Role,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireBlock,
)
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from abridged.domain.tokens import text_block_tokens
from abridged.domain.usage import Usage
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import check_request, feed
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

    # The prompt whole: the task is in all of it, not only its first line.
    request = entries[
        "request", "Fix the parser crash on empty input.\nIt started after the refactor."
    ]
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

    # A prompt of two lines is quoted whole, its layout kept, fenced under its range.
    assert (
        "\nm1\n```\nFix the parser crash on empty input.\nIt started after the refactor.\n```\n"
        in text
    )
    assert "m2-6 src/app/parser.py" in text
    # An error line names the tool whose output it was quoted from.
    assert "m5 [Bash] E   IndexError: string index out of range" in text
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


def protected(entries: Sequence[LedgerEntry]) -> set[LedgerEntry]:
    """What a short ledger drops last: the task (the first request), and of each kind its
    latest `RECENT_PER_KIND` entries and at least `KEPT_SHARE_PER_KIND` of them."""
    families: dict[str, list[LedgerEntry]] = {}
    for entry in entries:
        families.setdefault(entry.kind.split("-")[0], []).append(entry)
    kept = {
        entry
        for family in families.values()
        for entry in sorted(family, key=lambda e: -e.last_position)[
            : max(RECENT_PER_KIND, math.ceil(len(family) * KEPT_SHARE_PER_KIND))
        ]
    }
    requests = [e for e in entries if e.kind == "request"]
    if requests:
        kept.add(min(requests, key=lambda e: e.first_position))
    return kept


def worth(entry: LedgerEntry) -> float:
    """What an entry says for the room it takes: `VALUE_BASE ** PRIORITY` over its tokens."""
    return VALUE_BASE ** PRIORITY[entry.kind] / (COUNTER.count(render_line(entry)) + 1)


@settings(max_examples=150, deadline=None)
@given(st.lists(entry_strategy, max_size=90), st.integers(0, 600))
def test_bounding_fits_loses_nothing_unsaid_keeps_priority_and_is_deterministic(
    raw: list[LedgerEntry], budget: int
) -> None:
    entries = merge((), raw)

    kept, dropped = bounded(entries, budget, COUNTER.count)

    assert not kept or COUNTER.count(render_ledger(kept)) <= budget
    assert sorted(map(repr, kept + dropped)) == sorted(map(repr, entries))
    assert (kept, dropped) == bounded(entries, budget, COUNTER.count)
    # The protected go last, and of them the task last of all; before them and
    # among them, what says least for its tokens first, then the lower priority, a request
    # before a rule, and the older first.
    last = protected(entries)
    task = min(
        (e for e in entries if e.kind == "request"), key=lambda e: e.first_position, default=None
    )

    def final(entry: LedgerEntry) -> bool:
        return entry in last and entry is task

    for gone in dropped:
        for stays in kept:
            assert (
                gone in last,
                final(gone),
                worth(gone),
                PRIORITY[gone.kind],
                gone.kind == "constraint",
                gone.last_position,
            ) <= (
                stays in last,
                final(stays),
                worth(stays),
                PRIORITY[stays.kind],
                stays.kind == "constraint",
                stays.last_position,
            )


def test_a_short_budget_drops_one_long_old_prompt_before_many_short_facts() -> None:
    # A pasted plan of a few hundred tokens says one thing; the paths and commands it would
    # displace are each a fact a model looks up verbatim.
    plan = LedgerEntry("request", f"Follow this plan: {words(300)}", 1, 1)
    later = tuple(LedgerEntry("request", f"Now step {k}.", 10 + k, 10 + k) for k in range(7))
    reads = tuple(LedgerEntry("file-read", f"src/module_{k}.py", 2, 2) for k in range(12))
    task = LedgerEntry("request", "Build the exporter.", 0, 0)
    entries = (task, plan, *later, *reads)
    room = COUNTER.count(render_ledger((task, *later, *reads)))

    _, dropped = bounded(entries, room, COUNTER.count)

    assert dropped == (plan,)


def test_a_short_ledger_keeps_a_share_of_every_kind_not_only_its_latest_few() -> None:
    prompts = tuple(
        LedgerEntry("request", f"Prompt {k}: {words(60)}", 100 + k, 100 + k) for k in range(10)
    )
    commands = tuple(
        LedgerEntry("command", f"pytest tests/test_{k}.py -x", k, k, "bash") for k in range(40)
    )
    entries = (*commands, *prompts)
    room = COUNTER.count(render_ledger(prompts)) // 2

    kept, _ = bounded(entries, room, COUNTER.count)

    # 30% of the 40 commands, the latest, outlast the older prompts.
    assert set(commands[-math.ceil(40 * KEPT_SHARE_PER_KIND) :]) <= set(kept)
    assert math.ceil(40 * KEPT_SHARE_PER_KIND) > RECENT_PER_KIND


def test_a_short_budget_keeps_the_latest_errors_before_older_requests() -> None:
    requests = tuple(
        LedgerEntry("request", f"Request number {k}: {words(12)}", k, k) for k in range(20)
    )
    errors = tuple(
        LedgerEntry("error", f"ValueError: bad row {k}", 20 + k, 20 + k, "bash") for k in range(3)
    )
    entries = requests + errors
    room = COUNTER.count(render_ledger(requests[-8:] + errors))

    kept, dropped = bounded(entries, room, COUNTER.count)

    # Requests outrank errors, but not the latest few of a kind: the errors stay, the
    # oldest requests go but the first, the task, and the latest requests stay.
    assert set(errors) <= set(kept)
    assert requests[1] in dropped
    assert requests[0] in kept
    assert set(requests[-RECENT_PER_KIND:]) <= set(kept)


def test_a_short_ledger_keeps_error_lines_before_values_of_their_size() -> None:
    """Values of an error line's size (tickets, pins) go before the error lines of the same
    messages: an error a compaction loses is what the agent trips on again."""
    errors = tuple(LedgerEntry("error", f"KeyError: 'row_{k}'", k, k, "bash") for k in range(20))
    tickets = tuple(LedgerEntry("value", f"queue/tickets/INC-44{k:02d}", k, k) for k in range(20))
    sizes = {COUNTER.count(render_line(e)) for e in (*errors, *tickets)}
    assert max(sizes) - min(sizes) <= 2  # the same room each, give or take a token
    room = COUNTER.count(render_ledger((*errors, *tickets[-10:])))

    kept, dropped = bounded((*errors, *tickets), room, COUNTER.count)

    assert set(errors) <= set(kept)
    assert dropped
    assert {e.kind for e in dropped} == {"value"}


def test_a_rule_outlasts_the_requests_of_its_priority_but_the_task() -> None:
    task = LedgerEntry("request", "Raise the proxy's limits.", 0, 0)
    rule = LedgerEntry("constraint", "Never touch db/migrations.", 1, 1)
    asks = tuple(
        LedgerEntry("request", f"Task {k}: raise the limit in internal/proxy.go.", k, k)
        for k in range(2, 4)
    )
    entries = (task, rule, *asks)

    kept, dropped = bounded(entries, COUNTER.count(render_ledger((task, rule))), COUNTER.count)

    assert kept == (task, rule)
    assert dropped == asks


def test_a_consolidation_that_drops_a_request_keeps_the_rules_it_stated() -> None:
    # The session's task (the oldest request) is dropped last; the one after it states rules.
    task = LedgerEntry("request", "Work the support queue.", 0, 0)
    first = LedgerEntry(
        "request",
        "Rules for this shift: never refund more than 30000 JPY without escalating. "
        "Customer 0 asks about order SK-1001.\n" + words(60),
        1,
        1,
    )
    later = tuple(
        LedgerEntry("request", f"Customer {k} asks about order SK-{1000 + k}. {words(40)}", k, k)
        for k in range(2, 3 + RECENT_PER_KIND)
    )
    room = COUNTER.count(render_ledger((task, *later))) + 80

    update = consolidate((task, first, *later), room, COUNTER.count, slack=False)

    assert first in update.dropped
    assert task in update.entries
    rule = "Rules for this shift: never refund more than 30000 JPY without escalating."
    assert LedgerEntry("constraint", rule, 1, 1) in update.entries
    assert rule in update.text
    assert update.tokens <= room
    check_update((first, *later), 1, update)


def start(app: Sessions, window: int, **overrides: object) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=window,
        max_output_tokens=500,
        system="You are a careful coding agent.",
        tools=ALL_TOOLS,
        settings=CompactionSettings(**{"threshold_floor_tokens": 0, **overrides}),  # type: ignore[arg-type]
    )


def test_the_ledger_is_carried_across_compactions(
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


def test_a_compaction_that_leaves_the_ledger_no_room_drops_it_and_the_request_fits(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past a calibration above 1, the tail can leave the ledger less than one raw token
    # (`int(left / calibration)` is 0): the request was fitted without the ledger, so the
    # one the session holds must go too, every entry named, not stay in view.
    session_id = start(app, 3_000)
    feed(app, session_id, [m for i in range(12) for m in turn(f"Ask {i}", [words(120)])], COUNTER)
    app.append_message(session_id, Message.user("Next?"))
    app.prepare_request(session_id)
    raw = app.session(session_id).raw_estimate()
    app.record_reply(session_id, Message.assistant("On it."), Usage(input_tokens=2 * raw))
    app.append_message(session_id, Message.user("And now?"))
    held = {e.key for e in app.session(session_id).ledger}
    assert held
    real = cuts.tail_first

    def no_room_left(*args: Any) -> tuple[int, int, str]:
        cut, _, reason = real(*args)
        return cut, 1, reason

    monkeypatch.setattr(planner, "tail_first", no_room_left)
    app.request_compaction(session_id)
    prepared = app.prepare_request(session_id)

    session = app.session(session_id)
    update = [e for e in app.history(session_id) if isinstance(e, Session.LedgerUpdated)][-1]
    assert prepared.compaction is not None
    assert session.calibration > 1
    assert session.ledger == []
    assert session.ledger_tokens == 0
    assert {e.key for e in update.dropped} >= held
    check_request(prepared, COUNTER, session.calibration)


def test_a_tail_no_cut_can_shorten_gets_the_room_of_the_ledger_it_outgrew(app: Sessions) -> None:
    # A compaction keeps from a reply that calls a client tool and a server tool, and gives
    # the ledger what that reply and its results leave. The server tool runs when the results
    # come back, and the reply holding its result (paused on another call) goes with them: no
    # cut falls in the tail, so only the ledger can give way. It used to stay and the request
    # overflow ("message 18 ... cannot fit"); its lowest-priority entries go now, each named.
    session_id = app.start_session(
        model="claude-test",
        context_window=3_000,
        max_output_tokens=500,
        system="You are an agent.",
        tools=TOOLS,
    )
    for i in range(4):
        paths = " ".join(f"src/pkg_{i}/mod_{k}.py" for k in range(100))
        call = ToolUseBlock(f"toolu_{i}", "run_command", {"command": f"pytest tests/test_{i}.py"})
        feed(
            app,
            session_id,
            [
                Message.user(f"Task {i}: {paths}"),
                Message.assistant(call),
                Message.user(ToolResultBlock(f"toolu_{i}", words(40))),
                Message.assistant("Done."),
            ],
            COUNTER,
        )
    run = {"type": "server_tool_use", "name": "code_execution", "input": {"code": "print(1)"}}
    ran = {
        "type": "code_execution_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": {"type": "code_execution_result", "stdout": words(1_000), "stderr": ""},
    }
    call = ToolUseBlock("toolu_x", "run_command", {"command": words(1_000)})
    feed(
        app,
        session_id,
        [
            Message.user("Now run the whole suite."),
            Message.assistant(WireBlock.of({**run, "id": "srvtoolu_1"}), call),
            Message.user(ToolResultBlock("toolu_x", words(1_000))),
            Message.assistant(WireBlock.of(ran), WireBlock.of({**run, "id": "srvtoolu_2"})),
        ],
        COUNTER,
    )
    held = app.session(session_id).ledger

    prepared = app.prepare_request(session_id)

    session = app.session(session_id)
    assert [e.position for e in session.entries] == [17, 18, 19]
    update = app.history(session_id)[-1]
    assert isinstance(update, Session.LedgerUpdated)
    assert update.dropped
    assert {e.key for e in session.ledger} | {e.key for e in update.dropped} == {
        e.key for e in held
    }
    check_request(prepared, COUNTER, session.calibration)
    assert audit_session(app, session_id).ok


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


def fold(segments: list[str], step_text: str, consolidated: bool) -> list[str]:
    """The segments a request shows after a step (what `Session.LedgerUpdated` applies)."""
    if consolidated:
        return [step_text] if step_text else []
    return [*segments, step_text] if step_text else segments


def test_a_compaction_appends_only_what_is_new_or_changed_and_leaves_earlier_text() -> None:
    first = (
        LedgerEntry("request", "Fix the export.", 0, 0),
        LedgerEntry("file-read", "src/export.py", 1, 1),
        LedgerEntry("file-read", "src/cli.py", 2, 2),
        LedgerEntry("command", "make lint", 3, 3),
    )
    start = advance((), 0, 0, first, 2_000, COUNTER.count)
    assert start.consolidated
    assert start.text == render_ledger(first)
    assert start.tokens == text_block_tokens(start.text, COUNTER.count)

    later = (
        LedgerEntry("file-read", "src/cli.py", 20, 20),  # seen again: its range widens only
        LedgerEntry("file-modified", "src/export.py", 21, 21),  # read before, now modified
        LedgerEntry("command", "make lint", 22, 22),
        LedgerEntry("command-failed", "make test", 23, 23),  # new
    )
    step = advance(start.entries, start.tokens, 1, later, 2_000, COUNTER.count)

    assert not step.consolidated
    assert not step.dropped
    assert step.text.startswith(CONTINUED)
    assert "m2-22 src/export.py" in step.text
    assert "m24 ✗ make test" in step.text
    assert "src/cli.py" not in step.text
    assert "make lint" not in step.text
    assert step.tokens == start.tokens + text_block_tokens(step.text, COUNTER.count)
    held = {e.text: e for e in step.entries}
    assert held["src/cli.py"] == LedgerEntry("file-read", "src/cli.py", 2, 20)
    # Nothing new at all: no segment, the ranges still widen.
    quiet = advance(step.entries, step.tokens, 2, later[:1], 2_000, COUNTER.count)
    assert (quiet.text, quiet.tokens, quiet.consolidated) == ("", step.tokens, False)


def test_segments_past_the_room_are_consolidated_below_it_and_name_what_they_drop() -> None:
    old = tuple(LedgerEntry("file-read", f"pkg/old_{i}.py", i, i) for i in range(30))
    room = text_block_tokens(render_ledger(old), COUNTER.count) + 10
    start = advance((), 0, 0, old, room, COUNTER.count)
    assert start.consolidated
    assert not start.dropped

    new = tuple(LedgerEntry("file-modified", f"pkg/new_{i}.py", 40 + i, 40 + i) for i in range(8))
    step = advance(start.entries, start.tokens, 1, new, room, COUNTER.count)

    assert step.consolidated
    assert step.text.startswith(HEADING)
    assert step.tokens == text_block_tokens(step.text, COUNTER.count)
    assert step.tokens <= room - int(room * CONSOLIDATION_SLACK)
    # The lowest priority (files read), oldest first, went; every one is named.
    assert step.dropped
    assert all(e.kind == "file-read" for e in step.dropped)
    assert {e.key for e in step.entries} | {e.key for e in step.dropped} == {
        e.key for e in old + new
    }
    assert max(e.last_position for e in step.dropped) < min(
        e.last_position for e in step.entries if e.kind == "file-read"
    )


def test_a_consolidation_that_needs_no_drop_keeps_every_entry() -> None:
    old = tuple(LedgerEntry("file-read", f"pkg/old_{i}.py", i, i) for i in range(10))
    new = (LedgerEntry("command", "make", 11, 11),)
    whole = text_block_tokens(render_ledger(old + new), COUNTER.count)
    start = advance((), 0, 0, old, whole, COUNTER.count)

    step = advance(start.entries, start.tokens, 1, new, whole, COUNTER.count)

    # The new segment would not fit beside the old one, but the whole ledger fits at once.
    assert step.consolidated
    assert not step.dropped
    assert step.text == render_ledger(old + new)


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.lists(entry_strategy, max_size=12), min_size=1, max_size=25),
    st.integers(0, 600),
)
def test_advancing_keeps_the_ledger_shown_bounded_append_only_and_said(
    batches: list[list[LedgerEntry]], room: int
) -> None:
    held: tuple[LedgerEntry, ...] = ()
    tokens = 0
    segments: list[str] = []
    for batch in batches:
        step = advance(held, tokens, len(segments), batch, room, COUNTER.count)
        assert step == advance(held, tokens, len(segments), batch, room, COUNTER.count)
        new_segments = fold(segments, step.text, step.consolidated)
        if not step.consolidated:
            # Appending leaves every earlier segment's text as it was, and drops nothing.
            assert new_segments[: len(segments)] == segments
            assert not step.dropped
        assert len(new_segments) <= MAX_SEGMENTS
        assert step.tokens == sum(text_block_tokens(t, COUNTER.count) for t in new_segments)
        assert step.tokens <= room or not step.entries
        # Every entry held before or found now is held still, or named as dropped; but a
        # new mention whose name another entry quotes as a word is not listed again.
        before = {e.key for e in held} | {e.key for e in batch}
        after = {e.key for e in step.entries} | {e.key for e in step.dropped}
        assert after <= before
        others = [e.text for e in (*held, *batch) if e.kind != "mention"]
        for kind, text in before - after:
            assert kind == "mention"
            word = re.compile(rf"(?<!\w){re.escape(text)}(?!\w)")
            assert any(word.search(other) for other in others)
        # Every entry held is shown, with its current kind, in some segment.
        shown = "\n".join(new_segments)
        for entry in step.entries:
            mark = {"command-failed": "✗ ", "file-created": "(new) "}.get(entry.kind, "")
            assert f" {mark}{entry.text}\n" in shown + "\n"
        held, tokens, segments = step.entries, step.tokens, new_segments


def test_a_compaction_that_appends_reads_the_earlier_segments_from_the_prompt_cache(
    app: Sessions,
) -> None:
    session_id = start(app, 6_000, threshold_ratio=0.5, target_ratio=0.2, ledger_share=0.3)
    cache = PromptCache()
    appended = 0
    for i in range(40):
        ident, edit = call("Edit", file_path=f"pkg/module_{i}.py", new_string="x")
        messages = [
            Message.user(f"Task {i}: change pkg/module_{i}.py"),
            edit,
            result(ident, f"Edited pkg/module_{i}.py. {words(150)}"),
            Message.assistant(words(40)),
        ]
        for message in messages:
            if message.role is not Role.ASSISTANT:
                app.append_message(session_id, message)
                continue
            before = app.session(session_id)
            prepared = app.prepare_request(session_id)
            body = render_request(prepared.context, model="m", max_tokens=prepared.max_tokens)
            billing = cache.bill(request_blocks(body, COUNTER.count))
            after = app.session(session_id)
            if (
                prepared.compaction is not None
                and before.ledger_segments
                and len(after.ledger_segments) > len(before.ledger_segments)
            ):
                appended += 1
                # The earlier segments lead the request unchanged, and are read, not written.
                first = body["messages"][0]["content"]
                old = before.ledger_segments
                assert [b["text"] for b in first[: len(old)]] == old
                shown = request_blocks({**body, "messages": body["messages"][:1]}, COUNTER.count)
                prefix = sum(b.tokens for b in shown[: len(body["tools"]) + 1 + len(old)])
                assert billing.read >= prefix
            app.record_reply(session_id, message)
    assert appended >= 2


def test_the_ledger_keeps_the_users_constraints_and_the_names_numbers_and_links_given() -> None:
    long_prompt = (
        "Port the loader. " + "Context line about the project. " * 60 + "Never touch the "
        "migrations folder. Use the `--strict` flag and keep the timeout at 30 seconds. See "
        "https://example.org/spec for the format."
    )
    assert len(long_prompt) > REQUEST_CHARS
    messages = [
        Message.user(long_prompt),
        Message.assistant("I will change `load_config` and pass --dry-run; port 8080 stays."),
        Message.user("Only use tabs."),
    ]
    entries = {(e.kind, e.text) for e in extract(list(enumerate(messages)))}

    assert ("request", long_prompt[:REQUEST_CHARS]) in entries
    assert ("request", "Only use tabs.") in entries  # short: whole, and nothing repeated
    assert ("constraint", "Never touch the migrations folder.") in entries
    assert ("identifier", "--strict") in entries
    assert ("url", "https://example.org/spec") in entries
    assert ("identifier", "load_config") in entries
    assert ("identifier", "--dry-run") in entries
    assert ("number", "port 8080 stays") in entries
    assert not any(kind == "constraint" and "tabs" in text for kind, text in entries)


def test_text_beside_tool_results_is_not_taken_for_a_request() -> None:
    call = ToolUseBlock(id="toolu_1", name="web_fetch", input={"url": "https://example.org/a"})
    messages = [
        Message.user("Summarise the page."),
        Message(Role.ASSISTANT, (call,)),
        Message(
            Role.USER,
            (
                ToolResultBlock(tool_use_id="toolu_1", content="page body"),
                TextBlock("Retrieved page attached by the host: never cache it."),
            ),
        ),
    ]
    entries = {(e.kind, e.text) for e in extract(list(enumerate(messages)))}

    assert {text for kind, text in entries if kind in {"request", "constraint"}} == {
        "Summarise the page."
    }
    assert ("url", "https://example.org/a") in entries


def test_a_long_task_outlasts_the_latest_commands_and_files() -> None:
    # A real session's first prompt (a 2,500-character spec) left the ledger at a
    # consolidation that kept the latest third of its hundreds of short commands: among the
    # protected, a long entry said least for its room.
    task = LedgerEntry("request", "Build the appointment system. " + words(400), 0, 0)
    commands = tuple(
        LedgerEntry("command", f"Get-Content 'api/src/Module{k}.java'", k, k) for k in range(1, 90)
    )
    files = tuple(LedgerEntry("file-read", f"api/src/Module{k}.java", k, k) for k in range(1, 90))
    entries = (task, *commands, *files)
    room = COUNTER.count(render_ledger((task, *commands[-20:])))

    kept, dropped = bounded(entries, room, COUNTER.count)

    assert task in kept
    assert dropped
    assert COUNTER.count(render_ledger(kept)) <= room
