# ruff: noqa: E501 (the long lines are the sessions' own text: log lines, code and messages)
"""The third outside check's sessions of long text (`tests.support.outside_sessions_3` writes
them): a 20,000-token log pasted as the prompt, assistant answers of 3,000 to 5,000 tokens,
adaptive thinking with server tools, citations and `role: "system"` entries, and a coding
session whose rules are stated in its first prompts."""

from __future__ import annotations

import base64
import json
import random
from typing import Any

from tests.support.claude_code_logs import Log, text, thinking, tool_use
from tests.support.generated_sessions import Record

_SERVICES = ("payments-worker", "ledger-api", "notifier", "fx-rates")


def _signature(rng: random.Random) -> str:
    return base64.b64encode(rng.randbytes(rng.randint(180, 420))).decode()


def worker_log(rng: random.Random, lines: int, error_at: int) -> str:
    out: list[str] = []
    for n in range(lines):
        stamp = f"2026-11-19 03:{(n // 60) % 60:02d}:{n % 60:02d},{rng.randint(0, 999):03d}"
        service = rng.choice(_SERVICES)
        job = f"job-{rng.randint(100000, 999999)}"
        kind = rng.random()
        if kind < 0.7:
            line = f"{stamp} INFO  [{service}] {job} picked from queue payments.settle (attempt {rng.randint(1, 3)}, lag {rng.randint(2, 900)}ms)"
        elif kind < 0.9:
            line = f"{stamp} DEBUG [{service}] pg pool stats: size={rng.randint(10, 40)} idle={rng.randint(0, 10)} waiting={rng.randint(0, 5)}"
        else:
            line = f"{stamp} WARN  [{service}] {job} slow commit {rng.randint(1000, 9000)}ms on ledger_entries"
        if n == error_at:
            line += (
                f"\n{stamp} ERROR [payments-worker] {job} failed: psycopg.errors.SerializationFailure: could not serialize access due to concurrent update"
                "\nTraceback (most recent call last):"
                '\n  File "/srv/payments/worker/settle.py", line 141, in settle_batch'
                "\n    cur.execute(UPDATE_BALANCE, params)"
                "\npsycopg.errors.SerializationFailure: could not serialize access due to concurrent update"
            )
        out.append(line)
    return "\n".join(out)


def pasted_log_records(seed: int, questions: int) -> list[Record]:
    """The first prompt pastes about 20,000 tokens of a worker's log with the failure in the
    middle and a rule after it; then short questions answered with shell calls."""
    rng = random.Random(seed)
    paste = worker_log(rng, 520, error_at=300)
    records: list[Record] = [
        {
            "role": "user",
            "content": "The payments worker crashed at 03:10 last night. Here is the log:\n\n```\n"
            + paste
            + "\n```\n\nFind the root cause. Don't change the retry policy in config/retry.yaml, "
            "and keep the isolation level at SERIALIZABLE.",
        }
    ]
    commands = (
        (
            "grep -n 'isolation' /srv/payments/worker/db.py",
            "27:    conn.isolation_level = IsolationLevel.SERIALIZABLE",
        ),
        (
            "sed -n 120,160p /srv/payments/worker/settle.py",
            "141:        cur.execute(UPDATE_BALANCE, params)\n142:    except SerializationFailure:\n143:        raise",
        ),
        ("cat config/retry.yaml", "max_attempts: 3\nbackoff_ms: 250\nretry_on: [deadlock]"),
        (
            "pytest tests/worker/test_settle.py -q",
            "FAILED tests/worker/test_settle.py::test_concurrent_settle - psycopg.errors.SerializationFailure\n1 failed, 23 passed in 4.12s",
        ),
        (
            "git diff --stat HEAD~1",
            " worker/settle.py | 14 ++++++++------\n 1 file changed, 8 insertions(+), 6 deletions(-)",
        ),
    )
    for q in range(questions):
        command, output = commands[q % len(commands)]
        ident = f"toolu_p{q + 1:04d}"
        records.append(
            {
                "role": "assistant",
                "content": [text(f"Checking ({q})."), tool_use(ident, "Bash", command=command)],
            }
        )
        records.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": ident, "content": output}],
            }
        )
        records.append(
            {
                "role": "assistant",
                "content": f"`settle_batch` does not retry `SerializationFailure`; attempt budget is max_attempts 3 (step {q}).",
            }
        )
        records.append(
            {
                "role": "user",
                "content": rng.choice(
                    [
                        "Go on.",
                        "And the backoff?",
                        "What about the lock timeout of 5000 ms?",
                        "Check the test too.",
                    ]
                )
                + f" ({q})",
            }
        )
    records.append({"role": "assistant", "content": "Done."})
    return records


_DESIGN = (
    "The reconciliation job reads `ledger_entries` in pages of 5000 rows ordered by `entry_id`, "
    "so a restart resumes from the last committed `entry_id` instead of from the start.",
    "Each page is settled inside one transaction at SERIALIZABLE; a `SerializationFailure` "
    "rolls the page back and the page is retried with a jittered backoff of 250 ms to 4 s.",
    "The idempotency key is `(merchant_id, external_ref)`: a duplicate webhook from the "
    "acquirer finds the row and returns the stored result without writing again.",
    "Balances are never updated in place; each settlement appends a `balance_delta` row and "
    "the view `merchant_balances` sums them, so two workers never race on one row.",
    "The FX snapshot is taken once per page from `fx_rates` at the page's cut-off time, which "
    "keeps a page's amounts consistent even when the rates feed updates mid-run.",
)
_CODE = """```python
def settle_page(conn: Connection, after: int, limit: int = 5000) -> int:
    with conn.transaction(isolation=IsolationLevel.SERIALIZABLE):
        rows = conn.execute(SELECT_PAGE, {"after": after, "limit": limit}).fetchall()
        for row in rows:
            key = (row.merchant_id, row.external_ref)
            if conn.execute(SEEN, key).fetchone():
                continue
            conn.execute(INSERT_DELTA, delta_for(row, rates_at(conn, row.cutoff)))
        return rows[-1].entry_id if rows else after
```"""


def _design_answer(rng: random.Random, words: int) -> str:
    parts: list[str] = []
    size = 0
    section = 0
    while size < words:
        section += 1
        parts.append(
            f"## {section}. {rng.choice(['Paging', 'Retries', 'Idempotency', 'Balances', 'Rates', 'Rollout'])}"
        )
        for _ in range(rng.randint(3, 6)):
            para = " ".join(rng.choice(_DESIGN) for _ in range(rng.randint(2, 4)))
            parts.append(para)
            size += len(para.split())
        if rng.random() < 0.5:
            parts.append(_CODE)
            size += 90
    return "\n\n".join(parts)


def long_answers_claude_code_log(seed: int, turns: int) -> Log:
    """A Claude Code log of a design discussion: every answer is 3,000 to 5,000 tokens of
    prose and code (the shape once left unsent at 16k), some after a file read."""
    rng = random.Random(seed)
    log = Log()
    log.user(
        "Write the design for the nightly reconciliation job. Never propose a schema change to `ledger_entries`; it is shared with billing."
    )
    for k in range(turns):
        if k % 2 == 1:
            ident = f"toolu_l{seed}{k:03d}"
            log.assistant(
                text("Reading the current job first."),
                tool_use(ident, "Read", file_path="/srv/payments/jobs/reconcile.py"),
            )
            log.results((ident, _CODE.strip("`").removeprefix("python\n") * rng.randint(2, 6)))
        log.assistant(text(_design_answer(rng, rng.randint(2_300, 3_800))))
        log.user(
            rng.choice(
                [
                    "Shorter retries, please: the acquirer times out after 30 seconds.",
                    "What happens on a page of 5000 rows when one merchant is suspended?",
                    "Add the rollout plan; the flag is `reconcile_v2` and must default to off.",
                    "How does this behave at 12000 settlements per minute?",
                ]
            )
            + f" (round {k})"
        )
    log.assistant(text("Summary: page by `entry_id`, SERIALIZABLE per page, append-only deltas."))
    return log


def thinking_system_claude_code_log(seed: int, turns: int) -> Log:
    """A Claude Code log on a model that takes `role: "system"` messages: adaptive thinking
    (signed, sometimes `redacted_thinking`), web searches and fetches run by the server,
    cited text, interleaved thinking after tool results, and a `system` entry every third
    turn."""
    rng = random.Random(seed)
    log = Log()
    log.user(
        "Upgrade the service from Django 4.2 to 5.1. Never drop the `legacy_orders` table, and always keep `USE_TZ = True`."
    )
    for k in range(turns):
        if k % 3 == 1:
            log.raw(
                {
                    "type": "system",
                    "uuid": f"00000000-0000-4000-9000-{seed:04d}{k:08d}",
                    "sessionId": "4f1c8a5e-2b7d-4e0a-9c3b-5d6e7f8a9b0c",
                    "message": {
                        "role": "system",
                        "content": f"CI status at turn {k}: main is green; the deploy freeze starts Friday 18:00 UTC.",
                    },
                }
            )
        search = f"srvtoolu_{seed}{k:04d}"
        fetch = f"srvtoolu_{seed}{k:04d}f"
        call = f"toolu_{seed}{k:04d}"
        url = f"https://docs.djangoproject.com/en/5.1/releases/5.1/#{rng.choice(['backwards-incompatible-changes-in-5-1', 'features-removed-in-5-1', 'database-backend-api'])}"
        blocks: list[dict[str, Any]] = [
            thinking(
                f"Step {k}: the release notes say `DEFAULT_AUTO_FIELD` and `STORAGES` matter; check `settings/base.py` "
                + "and the `pytz` imports. " * rng.randint(20, 80),
                _signature(rng),
            )
        ]
        if k % 4 == 2:
            blocks.append({"type": "redacted_thinking", "data": _signature(rng)})
        blocks += [
            {
                "type": "server_tool_use",
                "id": search,
                "name": "web_search",
                "input": {"query": f"django 5.1 upgrade {k}"},
            },
            {
                "type": "web_search_tool_result",
                "tool_use_id": search,
                "content": [
                    {
                        "type": "web_search_result",
                        "url": f"{url}-{i}",
                        "title": "Django 5.1 release notes",
                        "encrypted_content": _signature(rng),
                        "page_age": "3 months ago",
                    }
                    for i in range(rng.randint(2, 5))
                ],
            },
            {"type": "server_tool_use", "id": fetch, "name": "web_fetch", "input": {"url": url}},
            {
                "type": "web_fetch_tool_result",
                "tool_use_id": fetch,
                "content": {
                    "type": "web_fetch_result",
                    "url": url,
                    "content": {
                        "type": "document",
                        "source": {"type": "text", "media_type": "text/plain", "data": ""},
                        "title": "Django 5.1 release notes",
                    },
                    "retrieved_at": "2026-11-20T10:15:00Z",
                },
            },
            {
                "type": "text",
                "text": f"The `pytz` support is gone in 5.0, so `settings/base.py` line {40 + k} must use `zoneinfo`.",
                "citations": [
                    {
                        "type": "web_search_result_location",
                        "url": f"{url}-0",
                        "title": "Django 5.1 release notes",
                        "encrypted_index": _signature(rng)[:64],
                        "cited_text": "Support for pytz was removed.",
                    }
                ],
            },
            tool_use(
                call, "Bash", command=f"python -m pytest tests/upgrade/test_step_{k}.py -x -q"
            ),
        ]
        log.assistant(*blocks)
        failed = k % 3 == 0
        output = (
            f"E   django.core.exceptions.ImproperlyConfigured: STORAGES must define 'staticfiles' (step {k})\n1 failed in 2.31s"
            if failed
            else f"{rng.randint(20, 90)} passed in {rng.randint(2, 9)}.{rng.randint(10, 99)}s"
        )
        log.results((call, output))
        log.assistant(
            thinking(
                "The result "
                + ("failed; " if failed else "passed; ")
                + "next step. " * rng.randint(10, 60),
                _signature(rng),
            ),
            text(f"Step {k} {'needs `STORAGES`' if failed else 'passes'}; moving on."),
        )
        if k % 2 == 1:
            log.user(
                f"Continue with step {k + 1}. Keep the freeze in mind, deploy only before Friday 18:00 UTC."
            )
    log.assistant(text("The upgrade is done; `legacy_orders` untouched."))
    return log


RULES = (
    "Never touch anything under db/migrations/.",
    "Use tabs for indentation, not spaces.",
    "Always run `make check` before you say you're done.",
    "The API must stay on port 8443.",
    "Don't bump the Go version past 1.22.",
)


def early_rules_records(seed: int, tasks: int) -> list[Record]:
    """A coding agent in OpenAI chat format: five rules in the first two prompts, then many
    tasks with file reads, patches and test runs; numbers (ports, versions, limits) and URLs
    in the prompts and answers."""
    rng = random.Random(seed)
    records: list[Record] = [
        {
            "role": "system",
            "content": "You are a coding agent working in the repository /home/dev/relay (Go).",
        },
        {
            "role": "user",
            "content": "We're going to work on the relay service today. " + " ".join(RULES[:3]),
        },
        {
            "role": "assistant",
            "content": "Understood: migrations untouched, tabs, `make check` before done.",
        },
        {
            "role": "user",
            "content": " ".join(RULES[3:])
            + " The upstream docs are at https://pkg.go.dev/net/http@go1.22.5.",
        },
        {"role": "assistant", "content": "Noted: port 8443 and Go 1.22."},
    ]
    files = [
        f"internal/{p}/{f}.go"
        for p in ("proxy", "limits", "auth", "metrics")
        for f in ("server", "config", "handler")
    ]
    calls = 0
    for task in range(tasks):
        target = rng.choice(files)
        limit = rng.choice([64, 128, 256, 1024])
        records.append(
            {
                "role": "user",
                "content": f"Task {task}: in {target}, raise the connection limit to {limit} and add a test. "
                f"See https://github.com/example/relay/issues/{4000 + task}.",
            }
        )
        steps = [
            (
                "read_file",
                {"path": target},
                "package "
                + target.split("/")[1]
                + "\n\n"
                + "\n".join(
                    f"\tmaxConns := {rng.randint(8, 512)} // line {n}"
                    for n in range(rng.randint(20, 60))
                ),
            ),
            (
                "apply_patch",
                {
                    "path": target,
                    "patch": f"@@ -12,1 +12,1 @@\n-\tmaxConns := 32\n+\tmaxConns := {limit}",
                },
                "patched",
            ),
            (
                "run_shell",
                {"cmd": f"go test ./{target.rsplit('/', 1)[0]}/... -run TestLimit{task}"},
                f"--- FAIL: TestLimit{task} (0.01s)\n    limits_test.go:{rng.randint(10, 99)}: expected {limit}, got 32\nFAIL"
                if rng.random() < 0.3
                else f"ok  \t{target.rsplit('/', 1)[0]}\t0.{rng.randint(10, 99)}s",
            ),
        ]
        for name, arguments, output in steps:
            calls += 1
            ident = f"call_r{calls:05d}"
            records.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": ident,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)},
                        }
                    ],
                }
            )
            records.append({"role": "tool", "tool_call_id": ident, "content": output})
        records.append(
            {
                "role": "assistant",
                "content": f"Task {task}: `maxConns` is {limit} in {target}; `make check` passes.",
            }
        )
    return records
