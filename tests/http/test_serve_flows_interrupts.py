"""A working day through `abridged serve`, continued: the user stops the model (Esc) during
a tool-using turn, rewinds to an earlier prompt (Esc Esc), and edits a prompt and sends it
again; on SQLite and PostgreSQL.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.http.test_serve_disconnects import wait_for_metric
from tests.http.test_serve_flows import source
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.harness_traffic import (
    INTERRUPTED_FOR_TOOL_USE,
    MAIN_MODEL,
    TOOLS,
    USER_ID,
    Harness,
    call,
    claude_code_system,
    database,
    harness_day,
    result,
    text,
    user,
)

REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if "
    "it was a file edit, the new_string was NOT written to the file). STOP what you are "
    "doing and wait for the user to tell you how to proceed."
)
INTERRUPTED = "[Request interrupted by user]"
SYSTEM = claude_code_system()
SECONDS = 10.0


@pytest.fixture(params=["sqlite", "postgres"])
def day(
    request: pytest.FixtureRequest, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> Iterator[Harness]:
    with harness_day(fake_anthropic, database(request, tmp_path)) as harness:
        yield harness


def step(day: Harness, history: list[Any], message: dict[str, Any], *reply: Any) -> None:
    """The user's (or the tools') `message`, and the model's `reply` (tool calls: a stop
    for tool use)."""
    history.append(message)
    calls = any(block["type"] == "tool_use" for block in reply)
    content = day.send(
        "main",
        history,
        system=SYSTEM,
        tools=TOOLS,
        max_tokens=4_000,
        reply=reply or None,
        stop_reason="tool_use" if calls else "end_turn",
    )
    history.append({"role": "assistant", "content": content})


def prompts(day: Harness, history: list[Any], *texts: str) -> list[Any]:
    for said in texts:
        step(day, history, user(text(said)), text(f"Done: {said.lower()}"))
    return history


def test_esc_while_tools_run_carries_on_in_the_same_session(day: Harness) -> None:
    history = prompts(day, [], "Find the export bug.")
    step(day, history, user(text("Fix it and run the tests.")),
         call("toolu_e1", "Read", file_path="reports/export.py"))  # fmt: skip
    step(day, history, user(result("toolu_e1", source("export", 30))),
         call("toolu_e2", "Edit", file_path="reports/export.py", old="[:-1]", new=""),
         call("toolu_e3", "Bash", command="pytest -q"))  # fmt: skip
    # Esc while the edit waits for approval: both calls answered as rejected, the
    # interruption noted, then the user's next prompt (the API joins them into one turn).
    rejected = user(
        result("toolu_e2", REJECTED, is_error=True),
        result("toolu_e3", REJECTED, is_error=True),
        text(INTERRUPTED_FOR_TOOL_USE),
    )
    history.append(rejected)
    step(day, history, user(text("Use a list comprehension instead.")), text("Done."))
    prompts(day, history, "Now run the tests.")

    day.check()
    costs = day.costs()
    assert (costs.sessions, costs.branches) == (1, 0)
    assert costs.prefix_breaks == 0


def test_rewinding_and_editing_start_one_branch_each_and_no_more(day: Harness) -> None:
    history = prompts(day, [], "Find the export bug.", "Fix it.", "Add a test.", "Commit.")
    # Esc Esc: back to before "Add a test.", and another prompt from there.
    rewound = prompts(day, history[:4], "Add a regression test for the last row.", "Run it.")
    branch = day.finals["main"][0]
    # The last prompt edited after its answer, and sent again; then the work goes on.
    prompts(day, rewound[:-2], "Run it with coverage.", "Commit.")
    # Another terminal carries on the rewound conversation (`--resume` of it).
    day.send("resumed", [*rewound, user(text("Push it."))], system=SYSTEM, tools=TOOLS)

    day.check()
    costs = day.costs()
    assert (costs.sessions, costs.branches) == (1, 2)  # the rewind, the edit
    assert day.finals["resumed"][0] == branch
    assert day.finals["main"][0] not in (branch, day.log[0].session_id)
    assert costs.prefix_breaks == 0
    assert costs.compactions == costs.summarizer_calls == 0


def test_esc_mid_stream_after_a_tool_result_carries_on_in_the_same_session(
    day: Harness, fake_anthropic: FakeAnthropic
) -> None:
    history = prompts(day, [], "Find the export bug.")
    step(day, history, user(text("Fix it.")),
         call("toolu_m1", "Read", file_path="reports/export.py"))  # fmt: skip
    history.append(user(result("toolu_m1", source("export", 30))))
    release = threading.Event()
    fake_anthropic.enqueue(fake.held(fake.message(fake.CANNED_TEXT), release))
    try:
        with day.client.messages.stream(
            model=MAIN_MODEL,
            max_tokens=4_000,
            system=SYSTEM,
            tools=TOOLS,
            messages=history,
            metadata={"user_id": USER_ID},
        ) as streamed:
            next(iter(streamed))  # the reply begins; the user presses Esc
        assert fake_anthropic.abandoned.acquire(timeout=SECONDS)
        # The proxy takes the unanswered results back (long before a person types again).
        wait_for_metric(day.url, "abridged_serve_withdrawn 1")
    finally:
        release.set()
    history.append(user(text(INTERRUPTED)))
    prompts(day, history, "Read reports/pdf.py first.")

    day.check()
    costs = day.costs()
    assert (costs.sessions, costs.branches) == (1, 0)
