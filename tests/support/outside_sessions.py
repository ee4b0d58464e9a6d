"""Sessions of shapes the defaults were never tuned or checked on, for an outside check.

Unlike `generated_sessions` (research, coding and support agents of short prompts), these
stress what those do not: long customer emails with policies stated once at the start, a
data agent whose outputs are large CSV and JSON tables of numbers (OpenAI format, parallel
calls), long signed thinking before parallel calls, one prompt that pastes a document of
about 30,000 tokens, text in right-to-left scripts, emoji sequences, combining marks and
CJK, and a Claude Code log with mid-conversation `system` entries and the blocks the API
itself returns (server tools, citations, images, unknown types and fields).

Deterministic for a seed, no network: `python -m tests.support.outside_sessions DIR`.
"""

from __future__ import annotations

import base64
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.claude_code_logs import Log, text, thinking
from tests.support.generated_sessions import Record, write_records

POLICIES = (
    "Never refund above $500 without a manager's approval.",
    "Always answer the customer in French.",
    "Don't share internal ticket notes with the customer.",
)
"""The support agent's rules, stated once, in its first prompt."""

_WORDS = [
    "the", "order", "arrived", "late", "and", "the", "box", "was", "open", "when", "it", "came",
    "so", "I", "would", "like", "to", "know", "what", "happened", "because", "this", "is",
    "the", "third", "time", "my", "delivery", "has", "been", "delayed", "this", "year", "and",
    "I", "have", "been", "a", "customer", "since", "2019", "with", "many", "orders", "and",
    "I", "expect", "better", "service", "please",
]  # fmt: skip


def _prose(rng: random.Random, words: int, vocabulary: tuple[str, ...] | list[str] = _WORDS) -> str:
    sentences: list[str] = []
    left = words
    while left > 0:
        n = min(left, rng.randint(8, 20))
        sentence = " ".join(rng.choice(vocabulary) for _ in range(n))
        sentences.append(sentence[0].upper() + sentence[1:] + ".")
        left -= n
    return " ".join(sentences)


def _email(rng: random.Random, order: str, amount: float, name: str) -> str:
    paragraphs = [f"Subject: order {order}, refund of ${amount:.2f}", "", "Hello,"]
    for _ in range(rng.randint(4, 12)):
        paragraphs += [_prose(rng, rng.randint(60, 180)), ""]
    paragraphs += [f"My phone is +33 6 {rng.randint(10, 99)} {rng.randint(10, 99)} 12 34."]
    paragraphs += ["", "> On an earlier date, support wrote:"]
    paragraphs += [f"> {_prose(rng, 30)}" for _ in range(rng.randint(2, 8))]
    paragraphs += ["", f"Regards,\n{name}"]
    return "\n".join(paragraphs)


def support_email_records(seed: int, tickets: int) -> list[Record]:
    """A support agent (Anthropic format): the rules once in the first prompt, then long
    customer emails (300 to 2,000 words, quoted threads), order lookups, refunds that fail
    above the limit, and replies drafted in French as a tool's `body`."""
    rng = random.Random(seed)
    names = ["Amélie Durand", "Jonas Weiß", "Søren Ågård", "Nguyễn Văn An", "O'Brien Ciarán"]
    records: list[Record] = []
    calls = 0
    for ticket in range(tickets):
        order = f"A{rng.randint(10_000_000, 99_999_999)}"
        amount = round(rng.uniform(20, 1_400), 2)
        email = _email(rng, order, amount, rng.choice(names))
        opening = " ".join(POLICIES) + "\n\n" if ticket == 0 else ""
        prompt = f"{opening}Ticket {ticket}: handle this email.\n\n{email}"
        records.append({"role": "user", "content": [{"type": "text", "text": prompt}]})

        def call(
            name: str, inputs: dict[str, Any], output: str, error: bool = False, order: str = order
        ) -> None:
            nonlocal calls
            calls += 1
            ident = f"toolu_e{seed:03d}{calls:05d}"
            records.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"Checking `{name}` for {order}."},
                        {"type": "tool_use", "id": ident, "name": name, "input": inputs},
                    ],
                }
            )
            result: Record = {"type": "tool_result", "tool_use_id": ident, "content": output}
            if error:
                result["is_error"] = True
            records.append({"role": "user", "content": [result]})

        lines = [
            {"sku": f"SKU-{rng.randint(0, 99_999):05d}", "price": round(rng.uniform(5, 400), 2)}
            for _ in range(rng.randint(1, 25))
        ]
        call("lookup_order", {"order_id": order}, json.dumps({"order": order, "lines": lines}))
        if amount > 500:
            call(
                "issue_refund",
                {"order_id": order, "amount": amount},
                f"RefundLimitError: amount {amount:.2f} exceeds the 500.00 limit for {order}",
                error=True,
            )
        else:
            call("issue_refund", {"order_id": order, "amount": amount}, '{"status": "refunded"}')
        reply = f"Bonjour, nous avons bien reçu votre demande concernant la commande {order}. " + (
            _prose(rng, rng.randint(80, 250))
        )
        call("send_reply", {"order_id": order, "body": reply}, '{"sent": true}')
        records.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": f"Ticket {ticket} done: refund of {amount:.2f} "
                        + ("escalated to a manager." if amount > 500 else "issued."),
                    }
                ],
            }
        )
    return records


def _csv(rng: random.Random, rows: int) -> str:
    header = "region,month,orders,revenue,refunds,margin_pct"
    body = [
        f"{rng.choice(['north', 'south', 'east', 'west'])},2026-{rng.randint(1, 12):02d},"
        f"{rng.randint(10, 99_999)},{rng.uniform(100, 9_999_999):.2f},{rng.randint(0, 999)},"
        f"{rng.uniform(-20, 60):.3f}"
        for _ in range(rows)
    ]
    return "\n".join([header, *body])


def data_agent_records(seed: int, questions: int) -> list[Record]:
    """A data agent in OpenAI chat format: parallel SQL and JSON calls whose outputs are
    CSV tables of up to 3,000 rows and nested JSON of numbers, missing-column errors, and
    answers quoting many figures."""
    rng = random.Random(seed)
    records: list[Record] = [
        {"role": "system", "content": "You are a data analyst with SQL and file tools."}
    ]
    calls = 0
    for q in range(questions):
        threshold = rng.randint(100, 5_000)
        records.append(
            {
                "role": "user",
                "content": f"Question {q}: which regions had revenue above {threshold} "
                f"in quarter {q % 4 + 1}? Use a limit of {rng.randint(10, 500)} rows.",
            }
        )
        for _ in range(rng.randint(1, 3)):
            batch = []
            for _ in range(rng.choice([1, 2, 3])):
                calls += 1
                ident = f"call_d{calls:05d}"
                kind = rng.choice(["run_sql", "read_json", "run_sql"])
                if kind == "run_sql":
                    sql = f"SELECT * FROM sales WHERE revenue > {threshold} LIMIT {calls}"
                    args: dict[str, Any] = {"query": sql}
                    if rng.random() < 0.15:
                        output = (
                            f'psycopg.errors.UndefinedColumn: column "revenue_q{q}" does not exist'
                        )
                    else:
                        output = _csv(rng, rng.choice([40, 400, 3_000]))
                else:
                    args = {"path": f"/data/exports/q{q}/summary_{calls}.json"}
                    output = json.dumps(
                        {
                            "stats": {
                                f"metric_{i}": [round(rng.gauss(0, 1_000), 4) for _ in range(20)]
                                for i in range(rng.randint(5, 80))
                            }
                        }
                    )
                batch.append((ident, kind, args, output))
            records.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": i,
                            "type": "function",
                            "function": {"name": k, "arguments": json.dumps(a)},
                        }
                        for i, k, a, _ in batch
                    ],
                }
            )
            records += [{"role": "tool", "tool_call_id": i, "content": o} for i, _, _, o in batch]
        figures = ", ".join(
            f"{r} revenue {rng.randint(1_000, 9_999_999)}"
            for r in ("north", "south", "east", "west")
        )
        records.append({"role": "assistant", "content": f"Question {q}: {figures}."})
    return records


def _signature(rng: random.Random) -> str:
    return base64.b64encode(rng.randbytes(rng.randint(200, 600))).decode()


def thinking_parallel_records(seed: int, tasks: int) -> list[Record]:
    """A coding agent with long signed thinking (800 to 4,000 words, signatures of 300 to 800
    characters, a redacted block now and then) before batches of two to four parallel
    calls, and thinking between the calls of one turn (interleaved)."""
    rng = random.Random(seed)
    vocabulary = [
        "maybe", "the", "cache", "`LruCache`", "evicts", "before", "flush", "so", "I",
        "should", "check", "src/cache/lru.rs", "line", "212", "and", "the", "test", "fails",
    ]  # fmt: skip
    records: list[Record] = []
    calls = 0
    for task in range(tasks):
        records.append(
            {
                "role": "user",
                "content": f"Task {task}: the cache test `evict_{task}` is flaky; find why "
                "and fix it. Don't change the public API.",
            }
        )
        for _ in range(rng.randint(2, 5)):
            content: list[Record] = []
            if rng.random() < 0.1:
                content.append({"type": "redacted_thinking", "data": _signature(rng)})
            content.append(
                {
                    "type": "thinking",
                    "thinking": _prose(rng, rng.randint(800, 4_000), vocabulary),
                    "signature": _signature(rng),
                }
            )
            batch = []
            for _ in range(rng.randint(2, 4)):
                calls += 1
                ident = f"toolu_t{seed:02d}{calls:06d}"
                if rng.random() < 0.5:
                    inputs: dict[str, Any] = {"path": f"src/cache/part_{rng.randint(0, 40)}.rs"}
                    output = "\n".join(
                        f"{n:4d}  let slot_{n} = table.get({rng.randint(0, 9_999)});"
                        for n in range(rng.randint(20, 600))
                    )
                    name = "read_file"
                else:
                    inputs = {"command": f"cargo test evict_{task} -- --nocapture"}
                    failing = rng.random() < 0.4
                    output = f"running {rng.randint(1, 300)} tests\n" + (
                        f"thread 'evict_{task}' panicked at src/cache/lru.rs:{212 + task}:9\n"
                        "error: test failed, to rerun pass `--lib`"
                        if failing
                        else "test result: ok."
                    )
                    name = "bash"
                batch.append((ident, name, inputs, output))
            content += [
                {"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a, _ in batch
            ]
            records.append({"role": "assistant", "content": content})
            records.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": i, "content": o}
                        for i, _, _, o in batch
                    ],
                }
            )
        records.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": _prose(rng, 300, vocabulary),
                        "signature": _signature(rng),
                    },
                    {"type": "text", "text": f"Task {task}: `evict_{task}` is stable now."},
                ],
            }
        )
    return records


def _document(rng: random.Random, sections: int) -> str:
    """A specification of about 30,000 tokens (cl100k) at 60 sections."""
    vocabulary = [
        "the", "service", "shall", "retain", "records", "for", "each", "tenant", "and",
        "report", "usage", "monthly", "within", "limits", "of", "this", "agreement",
    ]  # fmt: skip
    parts = ["MASTER SERVICES AGREEMENT — SCHEDULE B (technical annex)", ""]
    for s in range(1, sections + 1):
        parts.append(f"## {s}. Clause {s}")
        parts.append(_prose(rng, rng.randint(250, 450), vocabulary))
        if s % 7 == 0:
            parts.append(
                f"The provider must keep backups for {rng.randint(10, 400)} days "
                f"and never store data outside region eu-west-{s % 3 + 1}."
            )
        if s % 11 == 0:
            parts.append(f"See https://contracts.example.com/annex/{s}#clause-{s}.")
        parts.append("")
    return "\n".join(parts)


def pasted_document_records(seed: int, questions: int) -> list[Record]:
    """One prompt that pastes a document of about 30,000 tokens, then questions about it
    answered with searches in it and short quotes."""
    rng = random.Random(seed)
    document = _document(rng, 60)
    records: list[Record] = [
        {
            "role": "user",
            "content": "Review this agreement for me. Always cite the clause number.\n\n"
            + document,
        },
        {"role": "assistant", "content": "I have read the agreement; ask away."},
    ]
    for q in range(questions):
        clause = rng.randint(1, 60)
        ident = f"toolu_p{q:05d}"
        records.append(
            {"role": "user", "content": f"Question {q}: what does clause {clause} require?"}
        )
        records.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": ident,
                        "name": "search_document",
                        "input": {"query": f"Clause {clause}"},
                    }
                ],
            }
        )
        records.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": ident,
                        "content": _prose(rng, rng.randint(200, 900)),
                    }
                ],
            }
        )
        records.append(
            {
                "role": "assistant",
                "content": f"Clause {clause} requires retention for {rng.randint(10, 400)} days.",
            }
        )
    return records


RTL = "طلب المستخدم إصلاح الملف قبل الإصدار"
HEBREW = "המשתמש ביקש לתקן את הקובץ"
FAMILY = "👩\u200d👩\u200d👧\u200d👦"
COMBINING = "e\u0301te\u0301 cafe\u0301 n\u0303 a\u0308\u0304"
CJK = "数据处理报告"


def unicode_records(seed: int, turns: int) -> list[Record]:
    """Prompts in Arabic and Hebrew with numbers and paths inside them, emoji ZWJ
    sequences, combining marks, CJK paths and long CJK and right-to-left tool outputs (the
    head-and-tail cut falls inside them)."""
    rng = random.Random(seed)
    records: list[Record] = []
    calls = 0
    for turn in range(turns):
        path = f"文档/{CJK}_{turn:03d}.md"
        prompt = (
            f"{RTL} {turn} — {HEBREW}: `{path}` {FAMILY} {COMBINING}. "
            f"Port {8000 + turn}; never rename ملف_{turn}.txt."
        )
        records.append({"role": "user", "content": prompt})
        for _ in range(rng.randint(1, 3)):
            calls += 1
            ident = f"toolu_u{calls:05d}"
            pieces = [CJK, RTL, HEBREW, FAMILY, COMBINING, "🇫🇷", "👍🏽", "ﷺ", "𝕏"]
            output = "".join(rng.choice(pieces) for _ in range(rng.choice([50, 1_500, 6_000])))
            error = rng.random() < 0.2
            if error:
                output += f"\nUnicodeDecodeError: 'utf-8' codec can't decode byte 0x{turn:02x}"
            records.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"قراءة `{path}` {FAMILY}"},
                        {
                            "type": "tool_use",
                            "id": ident,
                            "name": "read_file",
                            "input": {"path": path},
                        },
                    ],
                }
            )
            result: Record = {"type": "tool_result", "tool_use_id": ident, "content": output}
            if error:
                result["is_error"] = True
            records.append({"role": "user", "content": [result]})
        records.append({"role": "assistant", "content": f"تم {turn} ✓ {FAMILY} {COMBINING} {CJK}"})
    return records


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4).decode()


def api_blocks_claude_code_log(seed: int, turns: int, reminders: int = 5) -> Log:
    """A Claude Code log (a model that takes mid-conversation `system` messages) with the
    blocks the API returns or a host passes on: `system` entries between a prompt and the
    reply, a screenshot, web searches run by the server (encrypted results), cited text,
    a fetched page as a document with empty text, a block of a type not known yet, and
    known blocks with fields not known yet. A `system` entry comes every `reminders` turns
    (every turn, at 1: a host that restates its rules each turn)."""
    rng = random.Random(seed)
    vocabulary = [
        "the", "deploy", "script", "reads", "`config.toml`", "and", "the", "runner",
        "retries", "timeout", "45", "see", "https://status.example.net/incidents", "now",
    ]  # fmt: skip
    log = Log()
    log.user(
        [
            {"type": "text", "text": "Fix the deploy. Never force-push to main."},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ]
    )
    for k in range(turns):
        if k % reminders == 2 % reminders:
            log.raw(
                {
                    "type": "system",
                    "uuid": f"00000000-0000-4000-9000-{k:012d}",
                    "sessionId": "4f1c8a5e-2b7d-4e0a-9c3b-5d6e7f8a9b0c",
                    "message": {"role": "system", "content": _reminder(k, reminders)},
                }
            )
        search = f"srvtoolu_{seed:02d}{k:05d}"
        call = f"toolu_{seed:02d}{k:05d}"
        cited = {
            "type": "text",
            "text": _prose(rng, rng.randint(100, 600), vocabulary),
            "citations": [
                {
                    "type": "web_search_result_location",
                    "url": f"https://status.example.net/incidents/{k}",
                    "title": f"Incident {k}",
                    "encrypted_index": _signature(rng)[:80],
                    "cited_text": "the runner retries",
                }
            ],
        }
        log.assistant(
            thinking(_prose(rng, rng.randint(100, 900), vocabulary), _signature(rng)),
            {
                "type": "server_tool_use",
                "id": search,
                "name": "web_search",
                "input": {"query": f"deploy incident {k}"},
            },
            {
                "type": "web_search_tool_result",
                "tool_use_id": search,
                "content": [
                    {
                        "type": "web_search_result",
                        "url": f"https://status.example.net/incidents/{k}/{i}",
                        "title": f"Incident {k}.{i}",
                        "encrypted_content": _signature(rng),
                        "page_age": "2 days ago",
                    }
                    for i in range(rng.randint(2, 6))
                ],
            },
            cited,
            {"type": "fable_scratchpad", "data": _signature(rng)[:120], "version": 2}
            if k % 6 == 1
            else {"type": "text", "text": f"Step {k}.", "annotations": {"confidence": 0.9}},
            {
                "type": "tool_use",
                "id": call,
                "name": "Bash",
                "input": {"command": f"./deploy.sh --stage {k} --dry-run"},
                "caller": {"type": "direct"},
            },
        )
        failed = k % 4 == 0
        output = _prose(rng, rng.randint(200, 1_200), vocabulary) + (
            f"\nError: deploy stage {k} timed out after 45s" if failed else ""
        )
        log.results((call, output))
        log.assistant(text(_prose(rng, rng.randint(200, 900), vocabulary)))
        if k % 3 == 2:
            page = {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": ""},
                "title": "empty page",
            }
            log.user([{"type": "text", "text": f"Next, stage {k + 1}; keep `--dry-run`."}, page])
    log.assistant(text("Deployed."))
    return log


def _reminder(k: int, every: int) -> str:
    if every > 1:
        return f"Reminder {k}: the CI is slow today."
    return (
        f"Turn {k} rules: never force-push to main; always run the dry run first; keep the "
        "stage order; report the exit code of every deploy step; do not retry a failed "
        "stage more than twice; use the staging cluster unless told otherwise."
    )


OUTSIDE_SET: dict[str, Callable[[], list[Record]]] = {
    "support-email-301": lambda: support_email_records(seed=301, tickets=30),
    "data-openai-302": lambda: data_agent_records(seed=302, questions=30),
    "thinking-parallel-303": lambda: thinking_parallel_records(seed=303, tasks=20),
    "pasted-document-304": lambda: pasted_document_records(seed=304, questions=30),
    "unicode-305": lambda: unicode_records(seed=305, turns=40),
}
"""The outside check's sessions (docs/evaluation.md, "An outside check"), by file name."""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tests.support.outside_sessions DIR", file=sys.stderr)
        return 2
    folder = Path(args[0])
    folder.mkdir(parents=True, exist_ok=True)
    for name, make in OUTSIDE_SET.items():
        print(write_records(make(), folder / f"{name}.jsonl"))
    print(api_blocks_claude_code_log(306, turns=40).write(folder / "api-blocks-306.log.jsonl"))
    log = api_blocks_claude_code_log(307, turns=100, reminders=1)
    print(log.write(folder / "reminders-307.log.jsonl"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
