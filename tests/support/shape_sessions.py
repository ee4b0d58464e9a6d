# ruff: noqa: E501 (the long lines are the sessions' own text)
"""The seventh outside check's sessions (docs/evaluation.md, "A seventh outside check").

Shapes no earlier generator or fixture has: a support chat with no tools and prompts of
thousands of words, a data agent whose outputs are wide CSV and JSON tables, prompts and
results full of PDFs and images (base64, url, text sources), sub-agent results that are
whole transcripts, long signed thinking before every batch of parallel calls, `system`
messages inside tool loops, thousands of tiny turns, one enormous output every turn, and
Arabic and Hebrew with emoji sequences and bidi marks. Deterministic for a seed:
`python -m tests.support.shape_sessions DIR` writes them (abridged JSONL with a
`.meta.json` beside, Claude Code logs and OpenAI chat).
"""

from __future__ import annotations

import base64
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.claude_code_logs import Log, text, tool_use
from tests.support.generated_sessions import Record, write_records
from tests.support.images import b64, png
from tests.support.shape_sessions_loops import (
    enormous_output_records,
    rtl_emoji_records,
    system_loops_records,
    thinking_parallel_records,
    tiny_turns_records,
)
from tests.support.shape_sessions_text import Meta, tool, words

# 601: a support chat with no tools and very long prompts (OpenAI chat).


def no_tools_chat_records(seed: int, turns: int) -> list[Record]:
    rng = random.Random(seed)
    records: list[Record] = [
        {"role": "system", "content": "You are a contracts desk assistant for Nordlys Freight."}
    ]
    for turn in range(turns):
        order = f"ORD-{rng.randint(10000, 99999)}"
        paragraphs = [
            f"From: buyer{turn}@kestrel-retail.example\nDate: 2026-0{1 + turn % 9}-{10 + turn % 18}\nSubject: {order} dispute"
        ]
        for p in range(rng.randint(8, 30)):
            paragraphs.append(f"§{turn}.{p} " + words(rng, rng.randint(60, 140)) + ".")
        if turn % 5 == 0:
            paragraphs.append(
                f"Never offer more than {rng.randint(10, 40)}% credit without the account manager."
            )
        prompt = "\n\n".join(paragraphs) + f"\n\nWhat do we owe on {order}, and by when?"
        records.append({"role": "user", "content": prompt})
        answer = (
            f"On {order}: clause §{turn}.{rng.randint(0, 7)} applies; credit of ${rng.randint(100, 9000)}.00 is due by 2026-12-{rng.randint(10, 28)}. "
            + words(rng, rng.randint(80, 300))
        )
        records.append({"role": "assistant", "content": answer})
    return records


# 602: a data agent whose outputs are wide CSV and JSON tables (abridged JSONL).


def _csv(rng: random.Random, columns: int, rows: int) -> str:
    header = ",".join(f"metric_{c:03d}" for c in range(columns))
    lines = [
        ",".join(f"{rng.uniform(-1000, 1000):.4f}" for _ in range(columns)) for _ in range(rows)
    ]
    return header + "\n" + "\n".join(lines)


def _json_table(rng: random.Random, keys: int, rows: int) -> str:
    return json.dumps(
        [
            {
                f"field_{k:02d}": rng.choice(
                    [rng.randint(0, 10**6), f"v{rng.randint(0, 999)}", None]
                )
                for k in range(keys)
            }
            for _ in range(rows)
        ]
    )


def wide_tables_records(seed: int, turns: int) -> tuple[list[Record], Meta]:
    rng = random.Random(seed)
    records: list[Record] = []
    calls = 0
    for turn in range(turns):
        table = f"sales_q{1 + turn % 4}_region_{turn}"
        records.append(
            {
                "role": "user",
                "content": f"Load `{table}` and tell me which metric moved most since 2026-0{1 + turn % 9}-01. Only use rows where region_id = {100 + turn}.",
            }
        )
        for step in range(3):
            calls += 1
            ident = f"toolu_{calls:05d}"
            if step == 0:
                call = {
                    "type": "tool_use",
                    "id": ident,
                    "name": "read_csv",
                    "input": {"path": f"data/{table}.csv"},
                }
                output = _csv(rng, rng.randint(80, 160), rng.randint(40, 90))
                error = False
            elif step == 1:
                query = f"SELECT * FROM {table} WHERE region_id = {100 + turn} LIMIT 200"
                call = {
                    "type": "tool_use",
                    "id": ident,
                    "name": "run_sql",
                    "input": {"query": query},
                }
                error = turn % 4 == 3
                output = (
                    f'ProgrammingError: column "region_id" does not exist in {table}'
                    if error
                    else _json_table(rng, rng.randint(30, 60), rng.randint(30, 80))
                )
            else:
                call = {
                    "type": "tool_use",
                    "id": ident,
                    "name": "run_python",
                    "input": {"code": f"df = load('{table}')\nprint(df.describe().T.to_csv())"},
                }
                output = _csv(rng, 9, rng.randint(80, 160))
                error = False
            records.append({"role": "assistant", "content": [call]})
            result: dict[str, object] = {
                "type": "tool_result",
                "tool_use_id": ident,
                "content": output,
            }
            if error:
                result["is_error"] = True
            records.append({"role": "user", "content": [result]})
        records.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": f"In `{table}`, `metric_{rng.randint(0, 79):03d}` moved most: {rng.uniform(5, 90):.1f}% up.",
                    }
                ],
            }
        )
    tools = [
        tool("read_csv", path="string"),
        tool("run_sql", query="string"),
        tool("run_python", code="string"),
    ]
    return records, {
        "system": "You are a data analyst.",
        "model": "claude-sonnet-4-5",
        "tools": tools,
    }


# 603: prompts and results full of documents and images (abridged JSONL).


def _pdf(rng: random.Random, pages: int) -> str:
    body = b"%PDF-1.7\n" + b"".join(
        b"%d 0 obj << /Type /Page >> stream\n" % p
        + rng.randbytes(rng.randint(2_000, 9_000))
        + b"\nendstream endobj\n"
        for p in range(pages)
    )
    return base64.b64encode(body + b"%%EOF\n").decode()


def documents_records(seed: int, turns: int) -> tuple[list[Record], Meta]:
    rng = random.Random(seed)
    records: list[Record] = []
    for turn in range(turns):
        blocks: list[dict[str, Any]] = []
        kind = turn % 4
        if kind == 0:
            blocks.append(
                {
                    "type": "document",
                    "source": {
                        "type": "base64",
                        "media_type": "application/pdf",
                        "data": _pdf(rng, rng.randint(2, 12)),
                    },
                    "title": f"statement-{turn}.pdf",
                }
            )
        elif kind == 1:
            blocks.append(
                {
                    "type": "document",
                    "source": {
                        "type": "url",
                        "url": f"https://files.example.org/reports/annual-{2010 + turn}.pdf",
                    },
                    "citations": {"enabled": True},
                }
            )
            blocks.append(
                {
                    "type": "image",
                    "source": {"type": "url", "url": f"https://img.example.org/chart-{turn}.png"},
                }
            )
        elif kind == 2:
            for i in range(rng.randint(2, 5)):
                blocks.append(
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": b64(
                                png(rng.choice([400, 1200, 2500]), rng.choice([300, 900, 1600]))
                            ),
                        },
                    }
                )
                blocks.append({"type": "text", "text": f"Screenshot {i} of step {turn}."})
        else:
            blocks.append(
                {
                    "type": "document",
                    "source": {
                        "type": "text",
                        "media_type": "text/plain",
                        "data": words(rng, rng.randint(300, 1500)),
                    },
                    "title": f"minutes-{turn}.txt",
                    "context": "board minutes",
                }
            )
        blocks.append(
            {
                "type": "text",
                "text": f"Item {turn}: what is the total on page {rng.randint(1, 9)}? Always quote the page.",
            }
        )
        records.append({"role": "user", "content": blocks})
        ident = f"toolu_doc_{turn:03d}"
        records.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Fetching the attachment."},
                    {
                        "type": "tool_use",
                        "id": ident,
                        "name": "fetch_attachment",
                        "input": {"attachment_id": f"ATT{turn:04d}X"},
                    },
                ],
            }
        )
        content: list[dict[str, Any]] = [{"type": "text", "text": f"Attachment ATT{turn:04d}X:"}]
        if turn % 2:
            content.append(
                {
                    "type": "document",
                    "source": {
                        "type": "base64",
                        "media_type": "application/pdf",
                        "data": _pdf(rng, 3),
                    },
                }
            )
        else:
            content.append(
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": "image/png",
                        "data": b64(png(800, 600)),
                    },
                }
            )
        records.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": ident, "content": content}],
            }
        )
        records.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": f"Page total: €{rng.randint(100, 99999)}.{rng.randint(10, 99)} (page {rng.randint(1, 9)}).",
                    }
                ],
            }
        )
    return records, {
        "system": "You read financial documents.",
        "model": "claude-sonnet-4-5",
        "tools": [tool("fetch_attachment", attachment_id="string")],
    }


# 604: sub-agent results that are whole transcripts (a Claude Code log).


def _transcript_text(rng: random.Random, task: int) -> str:
    lines = [f"# Sub-agent transcript for task {task}"]
    for step in range(rng.randint(20, 60)):
        path = f"src/modules/m{task}/part_{step}.ts"
        lines.append(
            json.dumps(
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": f"toolu_sub_{task}_{step}",
                            "name": "Read",
                            "input": {"file_path": path},
                        }
                    ],
                }
            )
        )
        result = "\n".join(
            f"{n:4d}  export const k{n} = {rng.randint(0, 999)};" for n in range(rng.randint(5, 40))
        )
        if step % 9 == 4:
            result = f"Error: ENOENT: no such file or directory, open '{path}'"
        lines.append(
            json.dumps(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"toolu_sub_{task}_{step}",
                            "content": result,
                        }
                    ],
                }
            )
        )
    lines.append(f"Final report: module m{task} uses `legacyFetch` in {rng.randint(2, 9)} places.")
    return "\n".join(lines)


def subagent_claude_code_log(seed: int, turns: int) -> Log:
    rng = random.Random(seed)
    log = Log()
    for turn in range(turns):
        log.user(
            f"Audit module m{turn} for `legacyFetch` and replace it with `httpClient.get`. Don't touch tests."
        )
        batch = [
            tool_use(
                f"toolu_task_{turn}_{i}",
                "Task",
                description=f"audit m{turn} part {i}",
                prompt=f"Find every legacyFetch in src/modules/m{turn}",
                subagent_type="general-purpose",
            )
            for i in range(rng.randint(1, 3))
        ]
        log.assistant(text("Spawning sub-agents."), *batch)
        log.results(
            *[(b["id"], [{"type": "text", "text": _transcript_text(rng, turn)}]) for b in batch]
        )
        ident = f"toolu_edit_{turn}"
        log.assistant(
            tool_use(
                ident,
                "Edit",
                file_path=f"/home/dev/app/src/modules/m{turn}/index.ts",
                old_string="legacyFetch(",
                new_string="httpClient.get(",
            )
        )
        log.results((ident, "The file has been updated."))
        log.assistant(text(f"m{turn}: replaced `legacyFetch` in `src/modules/m{turn}/index.ts`."))
    return log


SESSIONS: dict[str, Callable[[], Log | list[Record] | tuple[list[Record], Meta]]] = {
    "no-tools-chat-601": lambda: no_tools_chat_records(601, turns=30),
    "wide-tables-602": lambda: wide_tables_records(602, turns=20),
    "documents-603": lambda: documents_records(603, turns=24),
    "subagent-604.log": lambda: subagent_claude_code_log(604, turns=10),
    "thinking-parallel-605": lambda: thinking_parallel_records(605, turns=14),
    "system-loops-606": lambda: system_loops_records(606, turns=20),
    "tiny-turns-607": lambda: tiny_turns_records(607, turns=2_500),
    "enormous-output-608": lambda: enormous_output_records(608, turns=20),
    "rtl-emoji-609": lambda: rtl_emoji_records(609, tickets=60),
}
"""The sessions by file name (without `.jsonl`)."""


def write(folder: Path, name: str) -> Path:
    made = SESSIONS[name]()
    path = folder / f"{name}.jsonl"
    if isinstance(made, Log):
        return made.write(path)
    if isinstance(made, tuple):
        records, meta = made
        (folder / f"{name}.meta.json").write_text(json.dumps(meta), encoding="utf-8")
        return write_records(records, path)
    return write_records(made, path)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tests.support.shape_sessions DIR", file=sys.stderr)
        return 2
    folder = Path(args[0])
    folder.mkdir(parents=True, exist_ok=True)
    for name in SESSIONS:
        print(write(folder, name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
