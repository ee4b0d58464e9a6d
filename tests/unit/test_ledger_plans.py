"""The agent's own plan, as a planning tool writes it down, is kept through compactions: each
item once, with the status it last had. An agent that loses its list after a compaction loses
its place (Claude Code gives the list back after its own compaction for that reason)."""

from __future__ import annotations

import json

from abridged import bootstrap, render_request
from abridged.domain.ledger import advance, extract, render_ledger
from abridged.domain.ledger_plans import plan_entries
from abridged.domain.messages import Message, ToolResultBlock, ToolUseBlock
from tests.support.fakes import FakeTokenCounter


def _todo(ident: str, *items: tuple[str, str]) -> list[Message]:
    todos = [{"content": c, "status": s, "activeForm": c.lower()} for c, s in items]
    return [
        Message.assistant(ToolUseBlock(ident, "TodoWrite", {"todos": todos})),
        Message.user(ToolResultBlock(ident, "Todos have been modified successfully.")),
    ]


def _plan(messages: list[Message]) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in extract(list(enumerate(messages))) if e.kind[:4] == "plan"]


def test_each_item_is_kept_once_with_the_status_it_last_had() -> None:
    messages = [
        Message.user("Port the parser."),
        *_todo("t1", ("Read the parser", "in_progress"), ("Fix lexer.py", "pending")),
        *_todo("t2", ("Read the parser", "completed"), ("Fix lexer.py", "in_progress")),
    ]

    entries = [e for e in extract(list(enumerate(messages))) if e.kind[:4] == "plan"]

    assert [(e.kind, e.text, e.first_position, e.last_position) for e in entries] == [
        ("plan-done", "Read the parser", 1, 3),
        ("plan-doing", "Fix lexer.py", 1, 3),
    ]
    shown = render_ledger(entries)
    assert "m2-4 [x] Read the parser" in shown
    assert "m2-4 [>] Fix lexer.py" in shown


def test_other_planning_tools_and_statuses_are_read_and_prose_plans_are_not() -> None:
    steps = {"plan": [{"step": "Add the flag", "status": "done"}, {"step": "Docs", "status": "x"}]}
    prose = {"plan": "1. Add the flag\n2. Docs"}

    assert [(e.kind, e.text) for e in plan_entries(steps, 4)] == [
        ("plan-done", "Add the flag"),
        ("plan-todo", "Docs"),
    ]
    assert list(plan_entries(prose, 4)) == []
    calls = [*_todo("t1", ("Fix lexer.py", "pending"))]
    calls += [Message.assistant(ToolUseBlock("t2", "ExitPlanMode", prose))]
    assert [e.kind for e in extract(list(enumerate(calls)))] == ["plan-todo"]


def test_a_later_status_moves_a_held_item_on_in_a_new_segment() -> None:
    count = FakeTokenCounter().count
    first = [*_todo("t1", ("Fix lexer.py", "in_progress"), ("Run the tests", "pending"))]
    later = [*_todo("t2", ("Fix lexer.py", "completed"), ("Run the tests", "in_progress"))]
    start = advance((), 0, 0, extract(list(enumerate(first))), 2_000, count)

    update = advance(
        start.entries, start.tokens, 1, extract(list(enumerate(later, 10))), 2_000, count
    )

    assert {e.text: e.kind for e in update.entries} == {
        "Fix lexer.py": "plan-done",
        "Run the tests": "plan-doing",
    }
    assert not update.consolidated
    assert "[x] Fix lexer.py" in update.text
    assert "[>] Run the tests" in update.text


def test_after_many_compactions_the_request_still_holds_the_plan_and_where_the_agent_is() -> None:
    sessions = bootstrap()  # in memory, the extractive summarizer, cl100k counts
    session_id = sessions.start_session(
        model="claude-sonnet-4-5",
        context_window=8_000,
        max_output_tokens=1_000,
        tools=[
            {"name": "TodoWrite", "input_schema": {"type": "object"}},
            {"name": "bash", "input_schema": {"type": "object"}},
        ],
    )
    steps = [f"Port module {k:02d} of the parser to the new API" for k in range(12)]
    output = " ".join(f"line {k}: the module compiles with warnings." for k in range(150))
    sessions.append_message(session_id, {"role": "user", "content": "Port the whole parser."})
    for done in range(len(steps)):
        todos = [
            {"content": s, "status": "completed" if k < done else "in_progress" if k == done
             else "pending", "activeForm": s}
            for k, s in enumerate(steps)
        ]  # fmt: skip
        for call in (
            {"type": "tool_use", "id": f"toolu_t{done:02d}", "name": "TodoWrite",
             "input": {"todos": todos}},
            {"type": "tool_use", "id": f"toolu_b{done:02d}", "name": "bash",
             "input": {"command": f"make module-{done:02d}"}},
        ):  # fmt: skip
            sessions.prepare_request(session_id)
            sessions.record_reply(session_id, {"role": "assistant", "content": [call]})
            result = {"type": "tool_result", "tool_use_id": call["id"], "content": output}
            sessions.append_message(session_id, {"role": "user", "content": [result]})
    prepared = sessions.prepare_request(session_id)
    body = render_request(prepared.context, model=prepared.model, max_tokens=prepared.max_tokens)

    assert sessions.session(session_id).generation >= 3
    shown = json.dumps(body["messages"], ensure_ascii=False)
    assert f"[x] {steps[0]}" in shown  # done long ago, in a summarized message only
    assert [s for s in steps if s not in shown] == []
