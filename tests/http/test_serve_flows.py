"""A working day of Claude Code and Agent SDK traffic through `abridged serve`: subagents
and side requests interleaved with the main conversation, on SQLite and PostgreSQL.

Each flow is held to what a user relies on (every upstream request valid, nothing lost or
stored twice, a clean audit) and to what it costs them: the sessions and branches the
proxy starts, its compactions and summarizer calls, and the cache prefix kept from one
upstream request of a session to the next (`tests.support.harness_traffic`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.harness_traffic import (
    SIDE_MODEL,
    SUBAGENT_TOOLS,
    TITLE_SYSTEM,
    TOOLS,
    TOPIC_SYSTEM,
    Harness,
    call,
    claude_code_system,
    database,
    harness_day,
    result,
    subagent_system,
    text,
    thinking,
    user,
)


def source(name: str, lines: int) -> str:
    """A file as the Read tool shows it (numbered lines)."""
    return "\n".join(
        f"{n:>6}\tdef {name}_{n}(rows):  # keeps row {n} of the export in {name}.py"
        for n in range(1, lines + 1)
    )


@pytest.fixture(params=["sqlite", "postgres"])
def day(
    request: pytest.FixtureRequest, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> Iterator[Harness]:
    with harness_day(fake_anthropic, database(request, tmp_path)) as harness:
        yield harness


def quota_check(day: Harness) -> None:
    """What Claude Code sends at start-up to learn the account's limits."""
    quota = [{"role": "user", "content": "quota"}]
    day.send("quota", quota, model=SIDE_MODEL, max_tokens=1, stream=False)


def topic_check(day: Harness, prompt: str) -> None:
    messages = [{"role": "user", "content": prompt}]
    day.send(
        f"topic {prompt}",
        messages,
        model=SIDE_MODEL,
        system=[text(TOPIC_SYSTEM)],
        max_tokens=512,
        stream=False,
        temperature=0,
        reply=[text('{"isNewTopic": true, "title": "CSV export"}')],
    )


def title(day: Harness, history: list[Any]) -> None:
    transcript = "\n".join(
        block.get("text", "") for m in history for block in m["content"] if isinstance(m, dict)
    )
    day.send(
        f"title {len(history)}",
        [{"role": "user", "content": transcript[:2000]}],
        model=SIDE_MODEL,
        system=TITLE_SYSTEM,
        max_tokens=50,
        stream=False,
        reply=[text("Fix CSV export dropping last row")],
    )


def explore(day: Harness, prompt: str, file: str) -> str:
    """An Explore subagent's whole run: its own system prompt and tools, one Read, a report."""
    system, name = subagent_system("Explore"), f"explore {prompt}"
    history: list[Any] = [user(text(prompt))]
    reply = day.send(
        name,
        history,
        system=system,
        tools=SUBAGENT_TOOLS,
        reply=[call(f"toolu_x{len(file)}", "Read", file_path=file)],
        stop_reason="tool_use",
    )
    history += [
        {"role": "assistant", "content": reply},
        user(result(f"toolu_x{len(file)}", source(Path(file).stem, 60))),
    ]
    report = f"{file} slices rows[:-1], which drops the last row."
    reply = day.send(name, history, system=system, tools=SUBAGENT_TOOLS, reply=[text(report)])
    return report


def test_subagents_and_side_requests_leave_the_main_conversation_whole(day: Harness) -> None:
    system = claude_code_system()
    quota_check(day)
    prompt = "The CSV export drops the last row. Find why and fix it."
    topic_check(day, prompt)
    reminder = text("<system-reminder>cwd: /home/dev/bookminder</system-reminder>")
    main: list[Any] = [user(reminder, text(prompt, cache_control={"type": "ephemeral"}))]
    reply = day.send(
        "main",
        main,
        system=system,
        tools=TOOLS,
        thinking={"type": "adaptive"},
        reply=[
            thinking("The export module is large; delegate the search.", 1),
            call("toolu_task1", "Task", prompt="Find where reports/export.py drops a row."),
        ],
        stop_reason="tool_use",
    )
    report = explore(day, "Find where reports/export.py drops a row.", "reports/export.py")
    main += [{"role": "assistant", "content": reply}, user(result("toolu_task1", report))]
    reply = day.send(
        "main",
        main,
        system=system,
        tools=TOOLS,
        thinking={"type": "adaptive"},
        reply=[thinking("Fix the slice.", 2), text("The slice drops the last row; fixing it.")],
    )
    main.append({"role": "assistant", "content": reply})
    title(day, main)

    prompt = "Now check the PDF and the XLSX exports the same way, in parallel."
    topic_check(day, prompt)
    main.append(user(text(prompt)))
    reply = day.send(
        "main",
        main,
        system=system,
        tools=TOOLS,
        thinking={"type": "adaptive"},
        reply=[
            thinking("Two independent searches: two subagents at once.", 3),
            call("toolu_task2", "Task", prompt="Check reports/pdf.py for the slice."),
            call("toolu_task3", "Task", prompt="Check reports/xlsx.py for the slice."),
        ],
        stop_reason="tool_use",
    )

    async def both() -> list[list[Any]]:
        general = subagent_system("general-purpose")
        return list(
            await asyncio.gather(
                *(
                    day.send_async(
                        f"general {file}",
                        [user(text(f"Check {file}."))],
                        system=general,
                        tools=SUBAGENT_TOOLS,
                    )
                    for file in ("reports/pdf.py", "reports/xlsx.py")
                )
            )
        )

    reports = asyncio.run(both())
    main += [
        {"role": "assistant", "content": reply},
        user(*(result(f"toolu_task{n}", r) for n, r in zip((2, 3), reports, strict=True))),
    ]
    day.send("main", main, system=system, tools=TOOLS, thinking={"type": "adaptive"})
    title(day, main)
    quota_check(day)  # a second process starting: the same request again

    day.check()
    costs = day.costs()
    main_session = day.finals["main"][0]
    assert len({s.session_id for s in day.log if s.upstream.get("system") == system}) == 1
    assert main_session not in {day.finals[k][0] for k in day.finals if k != "main"}
    assert costs.prefix_breaks == 0
    assert costs.compactions == costs.summarizer_calls == 0
    # One session per conversation that has a system prompt of its own, and a branch per
    # further conversation under the same prompt (same-type subagents, side requests).
    conversations = {k.split(" ")[0] for k in day.finals}
    assert costs.sessions == len(conversations), sorted(day.finals)
    assert costs.sessions + costs.branches == len(day.finals), costs
    assert costs.upstream_requests == len(day.log)
