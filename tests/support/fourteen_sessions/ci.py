"""CI session: a flaky-test maintenance agent's Messages API traffic as a logging proxy
recorded it (proxy-recorded-814)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from tests.support.fourteen_sessions.common import (
    ENGLISH,
    IdGen,
    out_path,
    prose,
    text,
    tool_result,
    tool_use,
    write_abridged,
)

TESTS = [
    "tests/api/test_orders.py::test_refund_partial",
    "tests/api/test_orders.py::test_cancel_after_ship",
    "tests/worker/test_retry.py::test_backoff_jitter",
    "tests/worker/test_retry.py::test_dead_letter",
    "tests/db/test_migrations.py::test_0042_backfill",
    "tests/web/test_login.py::test_sso_redirect",
    "tests/web/test_login.py::test_mfa_timeout",
    "tests/billing/test_invoice.py::test_vat_rounding",
]
SYSTEM = "You maintain the CI of the shop monorepo. Use the tools; keep PRs small."
TOOLS: list[dict[str, Any]] = [
    {
        "name": "run_tests",
        "description": "Run pytest with arguments.",
        "input_schema": {"type": "object", "properties": {"args": {"type": "string"}}},
    },
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {
        "name": "edit_file",
        "description": "Replace text in a file.",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_str": {"type": "string"},
                "new_str": {"type": "string"},
            },
        },
    },
    {
        "name": "gh_api",
        "description": "Call the GitHub REST API.",
        "input_schema": {
            "type": "object",
            "properties": {
                "method": {"type": "string"},
                "endpoint": {"type": "string"},
                "fields": {"type": "object"},
            },
        },
    },
]
FIRST_PROMPT = (
    "CI has been red all week. Go through the flaky tests one by one. Rules: never mark a test "
    "xfail without an issue link, "
    "always rerun a fix 5 times before opening a PR, and don't touch tests/db/ without asking me."
)
LEADS = ["Running it in a loop.", "Let me read the test.", "Checking the CI history."]
CAUSES = [
    "race on the job queue",
    "timezone-dependent fixture",
    "shared Redis key between workers",
    "order-dependent DB state",
]


def _pytest_out(rnd: random.Random, test: str, fail: bool) -> str:
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.12.7, pytest-8.3.3, pluggy-1.5.0",
        f"collected {rnd.randint(40, 900)} items",
        "",
    ]
    lines += [f"{t} {'PASSED' if rnd.random() < 0.9 else 'SKIPPED'}" for t in rnd.sample(TESTS, 5)]
    if fail:
        lines += [
            f"{test} FAILED",
            "",
            "=================================== FAILURES ===================================",
            f"___ {test.split('::')[1]} ___",
            f"    assert resp.status_code == {rnd.choice([200, 201, 204])}",
            f"E   AssertionError: assert {rnd.choice([409, 500, 502])} == {rnd.choice([200, 201])}",
            f"FAILED {test} - AssertionError",
        ]
    lines.append(
        f"=== {rnd.randint(40, 800)} passed, {1 if fail else 0} failed in "
        f"{rnd.uniform(3, 90):.2f}s ==="
    )
    return "\n".join(lines)


def _tool_step(rnd: random.Random, tid: str, test: str) -> tuple[dict[str, Any], str]:
    """One tool call on `test` and its output."""
    r = rnd.random()
    if r < 0.45:
        call = tool_use(
            tid, "run_tests", args=f"{test} -p no:randomly --count={rnd.choice([5, 10, 20])} -x"
        )
        return call, _pytest_out(rnd, test, rnd.random() < 0.4)
    if r < 0.7:
        call = tool_use(tid, "read_file", path=test.split("::", maxsplit=1)[0])
        out = "\n".join(
            f"{i + 1:>4}  {prose(rnd, ENGLISH, 1)[:80]}" for i in range(rnd.randint(40, 160))
        )
        return call, out
    if r < 0.85:
        call = tool_use(
            tid,
            "edit_file",
            path=test.split("::", maxsplit=1)[0],
            old_str="time.sleep(0.1)",
            new_str="wait_for(lambda: job.done, timeout=5)",
        )
        return call, "OK: 1 replacement"
    call = tool_use(
        tid,
        "gh_api",
        method="GET",
        endpoint="/repos/shop/monorepo/actions/runs?branch=main&status=failure"
        f"&per_page={rnd.choice([10, 20])}",
    )
    runs = [
        {
            "id": rnd.randint(10**9, 10**10),
            "head_sha": f"{rnd.getrandbits(160):040x}",
            "conclusion": "failure",
            "name": "ci",
        }
        for _ in range(rnd.randint(3, 10))
    ]
    return call, json.dumps({"workflow_runs": runs})


def proxy_recorded(out_dir: Path) -> list[Path]:
    """proxy-recorded-814 (abridged JSONL): an agent's Messages API traffic as a logging proxy
    recorded it, replies byte for byte.

    A CI-maintenance agent (flaky tests, dependency bumps) with `run_tests`, `read_file`,
    `edit_file` and `gh_api` tools. Two things the API really returns are in it: a reply that
    starts with a `"\\n\\n"` text block before its tool call (the API takes it back: 200), and
    the empty reply (`content: []`, `stop_reason: end_turn`) Claude sometimes gives right after
    tool results, after which the host sends "continue". The lead's rules are in the first
    prompt.
    """
    rnd = random.Random(814)
    ids = IdGen(rnd)
    msgs: list[dict[str, Any]] = [{"role": "user", "content": FIRST_PROMPT}]
    for step in range(36):
        test = rnd.choice(TESTS)
        if step:
            ask = rnd.choice(
                [
                    f"Next: {test}",
                    f"{test} failed again on main, look at it.",
                    "Keep going.",
                    f"Is {test} really flaky or broken?",
                ]
            )
            msgs.append({"role": "user", "content": ask})
        for _ in range(rnd.randint(2, 4)):
            tid = ids()
            if rnd.random() < 0.3:
                lead = [text("\n\n")]
            else:
                lead = [text(rnd.choice(LEADS))] if rnd.random() < 0.5 else []
            call, out = _tool_step(rnd, tid, test)
            msgs.append({"role": "assistant", "content": [*lead, call]})
            msgs.append({"role": "user", "content": [tool_result(tid, out)]})
        if rnd.random() < 0.2:
            msgs.append({"role": "assistant", "content": []})
            msgs.append({"role": "user", "content": "continue"})
        issue = rnd.randint(4000, 4999)
        fixed = (
            f"{test}: {rnd.choice(CAUSES)}; "
            f"fixed with an explicit wait, 5/5 green locally, PR #{issue + 300} links issue "
            f"#{issue}. " + prose(rnd, ENGLISH, rnd.randint(1, 3))
        )
        msgs.append({"role": "assistant", "content": [text(fixed)]})

    msgs.append(
        {
            "role": "user",
            "content": "Summarise what you changed this week and remind me of my three rules.",
        }
    )
    rules = (
        "Rules: no xfail without an issue link, rerun every fix 5 times before a PR, and nothing "
        "in tests/db/ without asking."
    )
    msgs.append({"role": "assistant", "content": [text(rules)]})
    return write_abridged(
        out_path(out_dir, "proxy-recorded-814.jsonl"),
        msgs,
        system=SYSTEM,
        tools=TOOLS,
        model="claude-sonnet-4-5",
    )
