# ruff: noqa: E501 (the long lines are the sessions' own text)
"""The eighth outside check's sessions (docs/evaluation.md, "An eighth outside check").

Families no earlier generator or fixture has: a support agent switching between open
tickets and coming back to the first, an on-call agent whose first rule decides its last
task, a code reviewer naming commits in prose, a research agent quoting fetched pages
(server `web_search` and `web_fetch`), a pair-programming session whose rules change
("tabs", then "spaces"), a multi-agent hand-off with `system` messages and signed thinking
between tool calls, prompts in Greek, Thai and Hebrew with code, CI triage whose outputs are
lists of failures, and a notebook agent reporting figures in prose. Deterministic for a
seed: `python -m tests.support.eighth_sessions DIR` writes them (abridged JSONL with a
`.meta.json` beside, a Claude Code log and OpenAI chat).
"""

from __future__ import annotations

import base64
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.claude_code_logs import Log
from tests.support.eighth_sessions_chats import mixed_scripts_records, ticket_switch_records
from tests.support.eighth_sessions_ops import (
    Meta,
    Record,
    babble,
    ci_failures_records,
    code_review_log,
    long_loop_records,
    notebook_records,
    oncall_records,
    schema,
)


def _signed(rng: random.Random, thought: str) -> dict[str, Any]:
    signature = base64.b64encode(rng.randbytes(rng.randint(120, 400))).decode()
    return {"type": "thinking", "thinking": thought, "signature": signature}


# 704: a research agent quoting fetched pages, server search and fetch (abridged JSONL).


def research_quotes_records(seed: int, questions: int) -> tuple[list[Record], Meta]:
    rng = random.Random(seed)
    records: list[Record] = []
    for question in range(questions):
        topic = babble(rng, 2)
        records.append(
            {
                "role": "user",
                "content": f"What do primary sources say about {topic}? Quote them exactly and give the links.",
            }
        )
        search = f"srvtoolu_{seed}_{question}s"
        fetch = f"srvtoolu_{seed}_{question}f"
        urls = [
            f"https://journal{rng.randint(1, 40)}.example.org/articles/{rng.randint(1000, 99999)}"
            for _ in range(rng.randint(3, 8))
        ]
        page = " ".join(babble(rng, 12) + "." for _ in range(rng.randint(40, 400)))
        quote = babble(rng, 10)
        records.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "server_tool_use",
                        "id": search,
                        "name": "web_search",
                        "input": {"query": f"{topic} primary source"},
                    },
                    {
                        "type": "web_search_tool_result",
                        "tool_use_id": search,
                        "content": [
                            {
                                "type": "web_search_result",
                                "url": url,
                                "title": babble(rng, 4),
                                "encrypted_content": base64.b64encode(rng.randbytes(300)).decode(),
                                "page_age": f"{rng.randint(1, 30)} days ago",
                            }
                            for url in urls
                        ],
                    },
                    {
                        "type": "server_tool_use",
                        "id": fetch,
                        "name": "web_fetch",
                        "input": {"url": urls[0]},
                    },
                    {
                        "type": "web_fetch_tool_result",
                        "tool_use_id": fetch,
                        "content": {
                            "type": "web_fetch_result",
                            "url": urls[0],
                            "content": {
                                "type": "document",
                                "source": {
                                    "type": "text",
                                    "media_type": "text/plain",
                                    "data": page + " " + quote,
                                },
                                "title": babble(rng, 3),
                            },
                            "retrieved_at": "2026-11-28T09:00:00Z",
                        },
                    },
                    {
                        "type": "text",
                        "text": f'{urls[0]} says: "{quote}". See also {urls[1]} and {urls[2]} (published 2026-{rng.randint(1, 11):02d}-{rng.randint(10, 28)}).',
                    },
                ],
            }
        )
    return records, {
        "system": "You are a research agent. Cite sources.",
        "model": "claude-sonnet-4-5",
        "tools": [
            {"type": "web_search_20250305", "name": "web_search"},
            {"type": "web_fetch_20250910", "name": "web_fetch"},
        ],
    }


# 705: pair programming whose rules change along the way (abridged JSONL).


def changing_rules_records(seed: int, tasks: int) -> tuple[list[Record], Meta]:
    rng = random.Random(seed)
    changes = {
        0: "Always indent with tabs. Target Python 3.9.",
        tasks // 3: "Actually, always indent with 4 spaces, not tabs. Never use print for logging.",
        (2 * tasks)
        // 3: "Change of plan: target Python 3.12 from now on, and prefer match statements over if chains.",
    }
    records: list[Record] = []
    calls = 0
    for task in range(tasks):
        path = f"pkg/{babble(rng, 1).replace(' ', '_')}_{task}.py"
        prompt = f"Refactor {path} so `parse_{task}` returns a dataclass."
        if task in changes:
            prompt = changes[task] + " " + prompt
        records.append({"role": "user", "content": prompt})
        for step in ("read", "write", "test"):
            calls += 1
            ident = f"toolu_{calls:05d}"
            if step == "read":
                call = {
                    "type": "tool_use",
                    "id": ident,
                    "name": "read_file",
                    "input": {"path": path},
                }
                output = "\n".join(
                    f"def f_{n}(x):\n\treturn x * {n}" for n in range(rng.randint(20, 150))
                )
            elif step == "write":
                content = "\n".join(
                    f"def f_{n}(x: int) -> int:\n    return x * {n}"
                    for n in range(rng.randint(5, 40))
                )
                call = {
                    "type": "tool_use",
                    "id": ident,
                    "name": "write_file",
                    "input": {"path": path, "content": content},
                }
                output = "written"
            else:
                call = {
                    "type": "tool_use",
                    "id": ident,
                    "name": "bash",
                    "input": {"command": f"pytest tests/test_{task}.py -q"},
                }
                output = f"{rng.randint(3, 40)} passed in 0.{rng.randint(10, 99)}s"
            records.append({"role": "assistant", "content": [call]})
            records.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": ident, "content": output}],
                }
            )
        records.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Done: `parse_{task}` returns `Parsed{task}`."}
                ],
            }
        )
    records.append(
        {
            "role": "user",
            "content": "Before I merge: which indentation and which Python version do the rules say now?",
        }
    )
    records.append(
        {"role": "assistant", "content": [{"type": "text", "text": "Four spaces, Python 3.12."}]}
    )
    return records, {
        "system": "You are a pair programmer.",
        "model": "claude-sonnet-4-5",
        "tools": [
            schema("read_file", "path"),
            schema("write_file", "path", "content"),
            schema("bash", "command"),
        ],
    }


# 706: a multi-agent hand-off, system messages and signed thinking between calls (abridged JSONL).


def handoff_records(seed: int, cases: int) -> tuple[list[Record], Meta]:
    rng = random.Random(seed)
    agents = ["Triage", "Billing", "Shipping", "Fraud"]
    records: list[Record] = []
    calls = 0
    for case in range(cases):
        account = f"ACC{rng.randint(100000, 999999)}"
        records.append(
            {
                "role": "user",
                "content": f"Case {case}: account {account} reports {babble(rng, rng.randint(10, 40))}.",
            }
        )
        for hop in range(rng.randint(2, 4)):
            agent = agents[(case + hop) % len(agents)]
            records.append(
                {
                    "role": "system",
                    "content": [
                        {
                            "type": "text",
                            "text": f"Hand-off: you are now the {agent} agent for {account}. Only the Fraud agent may freeze an account.",
                        }
                    ],
                }
            )
            calls += 1
            ident = f"toolu_{calls:05d}"
            records.append(
                {
                    "role": "assistant",
                    "content": [
                        _signed(rng, f"As {agent}: {babble(rng, rng.randint(60, 300))}"),
                        {
                            "type": "tool_use",
                            "id": ident,
                            "name": "lookup",
                            "input": {"account": account, "view": agent.lower()},
                        },
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
                            "content": json.dumps(
                                {
                                    "account": account,
                                    "events": [babble(rng, 8) for _ in range(rng.randint(5, 60))],
                                }
                            ),
                        }
                    ],
                }
            )
        records.append(
            {
                "role": "assistant",
                "content": [
                    _signed(rng, babble(rng, rng.randint(40, 200))),
                    {
                        "type": "text",
                        "text": f"Case {case} closed for {account} by {agent}: reference CASE-{rng.randint(1000, 9999)}.",
                    },
                ],
            }
        )
    return records, {
        "system": "You are one of several agents sharing this conversation.",
        "model": "claude-opus-4-8",
        "tools": [schema("lookup", "account", "view")],
    }


SESSIONS: dict[str, Callable[[], Log | list[Record] | tuple[list[Record], Meta]]] = {
    "ticket-switch-701": lambda: ticket_switch_records(701, visits=40),
    "oncall-702": lambda: oncall_records(702, incidents=24),
    "code-review-703.log": lambda: code_review_log(703, reviews=30),
    "research-quotes-704": lambda: research_quotes_records(704, questions=30),
    "changing-rules-705": lambda: changing_rules_records(705, tasks=30),
    "handoff-706": lambda: handoff_records(706, cases=30),
    "mixed-scripts-707": lambda: mixed_scripts_records(707, turns=45),
    "ci-failures-708": lambda: ci_failures_records(708, builds=30),
    "notebook-709": lambda: notebook_records(709, questions=25),
    "long-loop-710": lambda: long_loop_records(710, prompts=3, steps=60),
}
"""The sessions by file name (without `.jsonl`)."""


def write(folder: Path, name: str) -> Path:
    made = SESSIONS[name]()
    path = folder / f"{name}.jsonl"
    if isinstance(made, Log):
        return made.write(path)
    records = made
    if isinstance(made, tuple):
        records, meta = made
        (folder / f"{name}.meta.json").write_text(json.dumps(meta), encoding="utf-8")
    with path.open("w", encoding="utf-8") as file:
        for record in records:
            file.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tests.support.eighth_sessions DIR", file=sys.stderr)
        return 2
    folder = Path(args[0])
    folder.mkdir(parents=True, exist_ok=True)
    for name in SESSIONS:
        print(write(folder, name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
