"""An imported Claude Code session, replayed at 16k, 32k and 64k by `abridged replay`.

The log is a long coding session as Claude Code writes it: streamed blocks with thinking,
parallel tool calls answered entry by entry, a sub-agent's sidechain, a file written whole
by one tool call (larger than what a 16k budget leaves), a pasted log larger than any of the
windows, and tool-search results. Every request is valid and within the budget.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from abridged.adapters.cli import main
from abridged.adapters.token_counters import TiktokenCounter
from tests.support.anthropic_rules import assert_valid_request
from tests.support.checks import recount
from tests.support.claude_code_logs import Log, text, thinking, tool_use
from tests.support.counting import MemoCounter

COUNTER = MemoCounter(TiktokenCounter())


def source_file(lines: int, seed: int) -> str:
    return "\n".join(
        f"    def method_{seed}_{i}(self, value: int) -> int:  # step {i} of module {seed}\n"
        f"        return self.table.get(value, {i * seed}) + helper_{i % 13}(value)"
        for i in range(lines)
    )


def coding_session() -> Log:
    log = Log().user("Port the billing module to the new ledger API, then make the tests pass.")
    for step in range(30):
        read, grep = f"toolu_R{step:04d}", f"toolu_G{step:04d}"
        log.assistant(
            thinking(f"Step {step}: I need the next file and its call sites.", f"sig{step}A=="),
            text(f"Reading module {step}."),
            tool_use(read, "Read", file_path=f"/repo/billing/mod_{step}.py"),
            tool_use(grep, "Grep", pattern=f"mod_{step}", path="/repo"),
        )
        log.results(
            (read, source_file(40 + (step % 5) * 60, step)),
            (grep, "\n".join(f"/repo/app/use_{k}.py:{k}: import mod_{step}" for k in range(30))),
        )
        if step == 3:
            log.user("Search for a faster way to do this", isSidechain=True)
            log.assistant(text("Sub-agent: use the Edit tool."), isSidechain=True)
            log.assistant(
                thinking("Find the edit tool.", "sigT=="),
                tool_use("toolu_S0001", "ToolSearch", query="edit"),
            )
            log.user(
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_S0001",
                        "content": [{"type": "tool_reference", "tool_name": "Edit"}],
                    }
                ]
            )
        if step == 10:
            log.assistant(
                thinking("Rewrite the whole ledger adapter in one go.", "sigW=="),
                tool_use(
                    "toolu_W0001",
                    "Write",
                    file_path="/repo/billing/ledger.py",
                    content=source_file(700, 99),
                ),
            )
            log.results(("toolu_W0001", "File created successfully at: /repo/billing/ledger.py"))
        if step == 20:
            log.assistant(
                thinking("Ask for the failing log.", "sigQ=="), text("Please paste the CI log.")
            )
            log.user(
                "Here is the CI log:\n"
                + "\n".join(
                    f"2026-11-20T10:{i % 60:02d}:00 ERROR ledger.sync[{i}] timeout after {i}ms"
                    for i in range(9_000)
                )
            )
    log.assistant(
        thinking("All ported.", "sigEnd=="), text("The billing module now uses the ledger API.")
    )
    log.user("Thanks. Summarize what changed.")
    return log


@pytest.mark.parametrize("window", [16_000, 32_000, 64_000])
def test_an_imported_claude_code_log_replays_valid_in_budget_requests(
    window: int, tmp_path: Path
) -> None:
    path = coding_session().write(tmp_path / "session.jsonl")
    dump = tmp_path / "requests"

    result = CliRunner().invoke(
        main,
        [
            "replay",
            str(path),
            "--format",
            "claude-code",
            "--window",
            str(window),
            "--db",
            ":memory:",
            "--dump-requests",
            str(dump),
            "--json",
        ],
    )

    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    reports, summary = lines[:-1], lines[-1]["summary"]
    bodies = sorted(dump.glob("*.json"))
    assert len(bodies) == len(reports) == summary["requests"] >= 34
    assert summary["overflows"] == 0
    assert summary["compactions"] > 0
    for body_path, report in zip(bodies, reports, strict=True):
        body = json.loads(body_path.read_text(encoding="utf-8"))
        assert_valid_request(body)
        counted = recount(body, COUNTER)
        # The count before calibration; the calibrated estimate is held to the budget.
        assert counted == report["raw_tokens"], body_path.name
        assert counted <= report["tokens"] <= window - body["max_tokens"], body_path.name
    # Thinking went out byte for byte.
    sent = [
        block
        for body_path in bodies
        for message in json.loads(body_path.read_text(encoding="utf-8"))["messages"]
        for block in message["content"]
        if block["type"] == "thinking"
    ]
    assert sent
    assert all(block["signature"].startswith("sig") for block in sent)
    assert "note: " in result.stderr
