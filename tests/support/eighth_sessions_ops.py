# ruff: noqa: E501 (the long lines are the sessions' own text)
"""The eighth outside check's sessions of operations and review work: an on-call agent
whose first prompt holds the one rule the last task needs, a code reviewer reading long
diffs and naming commits in prose, a CI triager whose every output is a list of distinct
failures, and a notebook agent reporting figures and column names in prose
(`tests.support.eighth_sessions` writes them)."""

from __future__ import annotations

import random
from typing import Any

from tests.support.claude_code_logs import Log, text, tool_use

Record = dict[str, object]
Meta = dict[str, Any]

_SYLLABLES = ["ka", "lo", "mi", "nu", "ra", "te", "vo", "zen", "dar", "pil", "qua", "sto"]


def babble(rng: random.Random, count: int) -> str:
    return " ".join(
        "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 3))) for _ in range(count)
    )


def schema(name: str, *fields: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"{name} ({', '.join(fields)})",
        "input_schema": {
            "type": "object",
            "properties": {field: {"type": "string"} for field in fields},
            "required": list(fields),
        },
    }


def _call(ident: str, name: str, **inputs: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": ident, "name": name, "input": inputs}


def _result(ident: str, content: Any, error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": ident, "content": content}
    if error:
        block["is_error"] = True
    return block


# 702: an on-call agent; the rule of the first prompt decides the last task (abridged JSONL).


def oncall_records(seed: int, incidents: int) -> tuple[list[Record], Meta]:
    rng = random.Random(seed)
    records: list[Record] = [
        {
            "role": "user",
            "content": "You're on call for the ledger cluster tonight. Never restart the primary `pg-ledger-0`; fail over to `pg-ledger-1` first and only with my go-ahead. Keep LEDGER_MAX_CONN=240 whatever the dashboards say.",
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Understood. Watching the ledger cluster."}],
        },
    ]
    calls = 0
    for incident in range(incidents):
        host = f"10.42.{incident % 7}.{rng.randint(10, 250)}"
        port = rng.choice([5432, 6379, 8080, 9090, 9187])
        pod = f"ledger-api-{rng.randint(1000, 9999)}-{babble(rng, 1).replace(' ', '')[:5]}"
        records.append(
            {
                "role": "user",
                "content": f"PAGE INC-{4400 + incident}: p99 latency on {host}:{port} is {rng.randint(800, 4000)}ms since {10 + incident % 12}:{rng.randint(10, 59)} UTC. Pod `{pod}` in namespace ledger-prod. Look into it.",
            }
        )
        for step in range(rng.randint(2, 4)):
            calls += 1
            ident = f"toolu_{calls:05d}"
            command = [
                f"kubectl -n ledger-prod logs {pod} --since=30m",
                f"kubectl -n ledger-prod describe pod {pod}",
                f"curl -s http://{host}:{port}/metrics | grep -E 'conn|latency'",
                f"psql -h {host} -p 5432 -c 'select count(*) from pg_stat_activity'",
            ][step]
            lines = [
                f'2026-11-28T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(100, 999)}Z level={rng.choice(["info", "warn", "info", "debug"])} msg="{babble(rng, rng.randint(4, 12))}" conn={rng.randint(10, 260)}'
                for _ in range(rng.randint(40, 220))
            ]
            if step == 0:
                lines.insert(
                    len(lines) // 2,
                    f'2026-11-28T03:{incident % 60:02d}:11.204Z level=error msg="FATAL: remaining connection slots are reserved (INC-{4400 + incident})"',
                )
            records.append(
                {"role": "assistant", "content": [_call(ident, "shell", command=command)]}
            )
            records.append({"role": "user", "content": [_result(ident, "\n".join(lines))]})
        records.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": f"INC-{4400 + incident}: {pod} hit the connection limit on {host}:{port}; LEDGER_POOL_SIZE was {rng.randint(20, 90)}. I scaled `deploy/ledger-api` to {rng.randint(4, 12)} replicas at {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} and latency is back to {rng.randint(40, 200)}ms.",
                    }
                ],
            }
        )
    records.append(
        {
            "role": "user",
            "content": "The primary looks wedged. What are you allowed to do to it, and which env var must stay as it is?",
        }
    )
    records.append(
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "Not restart `pg-ledger-0`: fail over to `pg-ledger-1` with your go-ahead, and keep LEDGER_MAX_CONN=240.",
                }
            ],
        }
    )
    return records, {
        "system": "You are an SRE agent with shell access to the ledger cluster.",
        "model": "claude-sonnet-4-5",
        "tools": [schema("shell", "command")],
    }


# 703: a code reviewer reading long diffs, commits named in prose (a Claude Code log).


def _diff(rng: random.Random, path: str, commit: str) -> str:
    lines = [
        f"commit {commit}",
        "Author: Dana Reyes <dana@ferrous.example>",
        "",
        f"    {babble(rng, 8)}",
        "",
        f"diff --git a/{path} b/{path}",
        f"--- a/{path}",
        f"+++ b/{path}",
    ]
    for hunk in range(rng.randint(3, 9)):
        start = rng.randint(10, 900)
        lines.append(f"@@ -{start},12 +{start},{rng.randint(10, 30)} @@ fn hunk_{hunk}()")
        for _ in range(rng.randint(15, 60)):
            sign = rng.choice([" ", " ", "+", "-"])
            lines.append(
                f"{sign}    let {babble(rng, 1).replace(' ', '_')} = {rng.randint(0, 999)};"
            )
    return "\n".join(lines)


def code_review_log(seed: int, reviews: int) -> Log:
    rng = random.Random(seed)
    log = Log()
    log.user(
        "Review the release branch commit by commit. Flag any unwrap() in src/net/. Don't approve anything that touches Cargo.lock without a reason in the message."
    )
    log.assistant(text("Ready for the first commit."))
    for review in range(reviews):
        commit = "".join(rng.choice("0123456789abcdef") for _ in range(40))
        path = f"src/{rng.choice(['net', 'store', 'cli', 'net'])}/{babble(rng, 1).replace(' ', '_')}.rs"
        log.user(f"Next: {commit[:10]}.")
        show = f"toolu_show_{review}"
        log.assistant(tool_use(show, "Bash", command=f"git show {commit[:10]}"))
        log.results((show, _diff(rng, path, commit)))
        line = rng.randint(10, 900)
        verdict = rng.choice(["approve", "request changes", "comment"])
        log.assistant(
            text(
                f"Commit {commit[:12]} changes {path} at line {line}: {babble(rng, rng.randint(20, 60))}. Verdict: {verdict}; see also {commit[:7]} in the summary."
            )
        )
    log.user("Which commits did you ask changes on, and at which lines?")
    log.assistant(text("Listed above, commit by commit."))
    return log


# 708: CI triage, every output a list of distinct failures (abridged JSONL).


def ci_failures_records(seed: int, builds: int) -> tuple[list[Record], Meta]:
    rng = random.Random(seed)
    records: list[Record] = []
    for build in range(builds):
        records.append(
            {
                "role": "user",
                "content": f"Build #{7100 + build} on runner ci-{rng.randint(1, 40)} is red. Triage it; only skip a test if it fails on main too.",
            }
        )
        ident = f"toolu_{build + 1:05d}"
        records.append(
            {"role": "assistant", "content": [_call(ident, "ci_log", build=str(7100 + build))]}
        )
        failures = []
        for n in range(rng.randint(3, 12)):
            module = babble(rng, 1).replace(" ", "_")
            failures.append(
                rng.choice(
                    [
                        f"FAILED tests/{module}/test_{n}.py::test_{babble(rng, 1).replace(' ', '_')} - AssertionError: expected {rng.randint(1, 99)} got {rng.randint(100, 999)}",
                        f"src/{module}.c:{rng.randint(10, 999)}:{rng.randint(1, 80)}: error: implicit declaration of function '{module}_{n}'",
                        f"error[E0{rng.randint(100, 799)}]: mismatched types in src/{module}.rs:{rng.randint(10, 500)}",
                        f"TypeError: Cannot read properties of undefined (reading '{module}') at web/{module}.ts:{rng.randint(5, 300)}",
                    ]
                )
            )
        noise = [
            f"[{n:05d}] {babble(rng, rng.randint(3, 10))}" for n in range(rng.randint(60, 400))
        ]
        for failure in failures:
            noise.insert(rng.randint(0, len(noise)), failure)
        content: Any = [
            {"type": "text", "text": "\n".join(noise[: len(noise) // 2])},
            {"type": "text", "text": "\n".join(noise[len(noise) // 2 :])},
        ]
        records.append({"role": "user", "content": [_result(ident, content, error=True)]})
        records.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": f"Build #{7100 + build}: {len(failures)} failures; the first is `{failures[0][:60]}`. Re-running on main next.",
                    }
                ],
            }
        )
    return records, {
        "system": "You are a CI triage agent.",
        "model": "claude-sonnet-4-5",
        "tools": [schema("ci_log", "build")],
    }


# 709: a notebook agent, figures and column names in prose (abridged JSONL).


def notebook_records(seed: int, questions: int) -> tuple[list[Record], Meta]:
    rng = random.Random(seed)
    columns = [
        f"{babble(rng, 1).replace(' ', '_')}_{suffix}"
        for suffix in ("eur", "pct", "count", "ms", "ratio")
    ] * 4
    records: list[Record] = [
        {
            "role": "user",
            "content": "Load warehouse/orders_2026.parquet. Always report money in EUR with two decimals and never drop rows with a null region_code.",
        }
    ]
    calls = 0
    for question in range(questions):
        if question:
            records.append(
                {
                    "role": "user",
                    "content": f"Now break down {rng.choice(columns)} by region_code for week {question + 1}.",
                }
            )
        for _ in range(rng.randint(1, 3)):
            calls += 1
            ident = f"toolu_{calls:05d}"
            chosen = rng.sample(columns, 8)
            code = f"df.groupby('region_code')[{chosen!r}].describe()"
            header = "region_code  " + "  ".join(f"{c:>18}" for c in chosen)
            table = "\n".join(
                f"R{r:03d}         "
                + "  ".join(f"{rng.uniform(-5000, 90000):18.3f}" for _ in chosen)
                for r in range(rng.randint(20, 120))
            )
            records.append({"role": "assistant", "content": [_call(ident, "run_cell", code=code)]})
            records.append(
                {"role": "user", "content": [_result(ident, f"Out[{calls}]:\n{header}\n{table}")]}
            )
        column = rng.choice(columns)
        records.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": f"Week {question + 1}: {column} peaks in region R{rng.randint(0, 99):03d} at €{rng.randint(1000, 99999)}.{rng.randint(10, 99)}, up {rng.randint(2, 40)}.{rng.randint(0, 9)}% on week {question}; median latency_ms {rng.randint(100, 900)}.",
                    }
                ],
            }
        )
    return records, {
        "system": "You are a data analyst working in a Jupyter kernel.",
        "model": "claude-sonnet-4-5",
        "tools": [schema("run_cell", "code")],
    }


# 710: a few prompts, each answered by one loop of dozens of steps led by signed thinking
# (abridged JSONL).


def long_loop_records(seed: int, prompts: int, steps: int) -> tuple[list[Record], Meta]:
    rng = random.Random(seed)
    records: list[Record] = []
    calls = 0
    for _ in range(prompts):
        service = f"billing-{babble(rng, 1).replace(' ', '')}"
        records.append(
            {
                "role": "user",
                "content": f"Migrate every handler in services/{service}/ from callbacks to async/await, one file at a time, running the tests after each. Don't change public signatures.",
            }
        )
        for step in range(steps):
            calls += 1
            ident = f"toolu_{calls:05d}"
            path = f"services/{service}/handlers/h{step:03d}.js"
            signature = "".join(
                rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789+/")
                for _ in range(rng.randint(200, 500))
            )
            records.append(
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "thinking",
                            "thinking": f"Step {step} of {service}: {babble(rng, rng.randint(80, 400))}",
                            "signature": signature,
                        },
                        {"type": "text", "text": f"Converting `{path}`."},
                        _call(
                            ident,
                            "bash",
                            command=f"node scripts/convert.js {path} && npm test -- {path}",
                        ),
                    ],
                }
            )
            failed = step % 7 == 3
            output = "\n".join(
                f"  ✓ {babble(rng, 4)} ({rng.randint(1, 90)} ms)"
                for _ in range(rng.randint(10, 160))
            )
            if failed:
                output += f"\n  ✗ TypeError: cb is not a function at {path}:{rng.randint(5, 300)}:{rng.randint(1, 40)}"
            records.append({"role": "user", "content": [_result(ident, output, error=failed)]})
        records.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": f"services/{service}: {steps} handlers converted; 0 signatures changed.",
                    }
                ],
            }
        )
    return records, {
        "system": "You are a coding agent.",
        "model": "claude-sonnet-4-5",
        "tools": [schema("bash", "command")],
    }
