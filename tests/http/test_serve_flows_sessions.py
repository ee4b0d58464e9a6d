"""A working day through `abridged serve`, continued: the client's own `/compact` and
`/clear`, and `--continue` from a new process the next day, on a conversation long enough
that the proxy compacts it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.http.test_serve_flows import source
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.harness_traffic import (
    CONTINUED,
    TOOLS,
    Harness,
    call,
    claude_code_system,
    harness_day,
    result,
    text,
    user,
)

WINDOW = 12_000
COMPACT_PROMPT = (
    "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\nYour task is to create a "
    "detailed summary of the conversation so far, paying close attention to the user's "
    "explicit requests and your previous actions."
)


@pytest.fixture
def small(fake_anthropic: FakeAnthropic, tmp_path: Path) -> Iterator[Harness]:
    """The proxy with a window small enough that a morning's work compacts."""
    with harness_day(
        fake_anthropic, str(tmp_path / "sessions.sqlite3"), context_window=WINDOW
    ) as harness:
        yield harness


def explanation(file: str) -> str:
    """The model's answer about a module: a paragraph per group of its functions."""
    return "\n\n".join(
        f"reports/{file}.py, functions {file}_{n} to {file}_{n + 9}: each keeps one row of "
        f"the {file} export, slicing the rows it is given from row {n}; the tests cover "
        f"rows {n} to {n + 9}, and the last row is kept since the slice was fixed."
        for n in range(1, 41, 10)
    )


def work(
    day: Harness, history: list[Any], system: Any, files: list[str], conversation: str = "main"
) -> list[Any]:
    """One prompt per file: the model reads it, then answers; returns the history."""
    for file in files:
        history.append(user(text(f"Read reports/{file}.py and tell me what it exports.")))
        tool_id = f"toolu_{file}"
        reply = day.send(
            conversation,
            history,
            system=system,
            tools=TOOLS,
            max_tokens=2_000,
            reply=[call(tool_id, "Read", file_path=f"reports/{file}.py")],
            stop_reason="tool_use",
        )
        history += [
            {"role": "assistant", "content": reply},
            user(result(tool_id, source(file, 40))),
        ]
        reply = day.send(
            conversation,
            history,
            system=system,
            tools=TOOLS,
            max_tokens=2_000,
            reply=[text(explanation(file))],
        )
        history.append({"role": "assistant", "content": reply})
    return history


MORNING = ["csv", "pdf", "xlsx", "html", "json", "xml", "yaml", "toml", "ods", "rtf"]


def test_a_long_session_compacts_without_breaking_its_cache_between_compactions(
    small: Harness,
) -> None:
    work(small, [], claude_code_system(), MORNING)

    small.check()
    costs = small.costs()
    assert (costs.sessions, costs.branches) == (1, 0)
    assert costs.compactions >= 1  # the window is small: the proxy compacted
    assert costs.prunes >= 1
    assert costs.summarizer_calls == costs.compactions
    # Each compaction and prune changes the prompt once; between them, every request
    # starts with the one before it.
    assert costs.prefix_breaks == 0


def test_compact_and_clear_each_start_one_branch_and_carry_on_there(small: Harness) -> None:
    system = claude_code_system()
    history = work(small, [], system, MORNING[:4])
    # `/compact`: the same conversation, asked for a summary (text only).
    history.append(user(text(COMPACT_PROMPT)))
    summary = small.send("main", history, system=system, tools=TOOLS, max_tokens=2_000,
                         reply=[text("<summary>Read four export modules.</summary>")])  # fmt: skip
    # The conversation starts again from the summary.
    compacted = [user(text(CONTINUED + summary[0]["text"]))]
    compacted = work(small, compacted, system, ["json", "xml"], "compacted")
    after_compact = small.costs()
    # `/clear`: the same system prompt, an empty history.
    work(small, [], system, ["yaml", "toml"], "cleared")

    small.check()
    costs = small.costs()
    assert (costs.sessions, costs.branches) == (1, 2)  # one branch each, nothing else
    assert after_compact.branches == 1
    assert costs.prefix_breaks == 0
    assert costs.compactions == costs.summarizer_calls == 0  # nothing needed summarizing


def test_continue_from_a_new_process_the_next_day_is_a_session_of_its_own_name(
    small: Harness,
) -> None:
    # The naming rule (docs/serving.md): a changed system prompt is another name. Its cost,
    # the history copied and summarized again, is recorded there as open.
    history = work(small, [], claude_code_system("2026-11-28"), MORNING)
    yesterday = small.costs()
    # `claude --continue` the next day: the same history, the environment's date moved on.
    work(small, history, claude_code_system("2026-11-29"), ["ini"])

    small.check()  # every request valid, every audit clean, each history whole
    costs = small.costs()
    assert (costs.sessions, costs.branches) == (2, 0)
    assert costs.prefix_breaks == 0
    assert costs.summarizer_calls > yesterday.summarizer_calls


def test_rewinding_a_compacted_session_is_one_branch_and_leaves_the_session_as_it_was(
    small: Harness,
) -> None:
    # A branch starts from the client's whole history (docs/serving.md): it summarizes again
    # what its parent had, a cost recorded there as open.
    system = claude_code_system()
    history = work(small, [], system, MORNING)
    morning = small.costs()
    assert morning.compactions >= 1
    # Esc Esc: back to before the last file, another prompt from there.
    work(small, history[:-4], system, ["ini"])

    small.check()
    costs = small.costs()
    assert (costs.sessions, costs.branches) == (1, 1)
    assert costs.prefix_breaks == 0
