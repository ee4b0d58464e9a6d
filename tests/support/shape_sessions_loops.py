# ruff: noqa: E501 (the long lines are the sessions' own text)
"""The seventh outside check's sessions with tool loops and scripts: long signed thinking
before every batch of parallel calls, `system` messages inside tool loops, thousands of
tiny turns, one enormous output every turn, Arabic and Hebrew with emoji sequences and bidi
marks (`tests.support.shape_sessions` writes them)."""

from __future__ import annotations

import json
import random
from typing import Any

from tests.support.generated_sessions import Record
from tests.support.shape_sessions_text import Meta, signature, tool, words

# 605: long signed thinking before every batch of parallel calls (abridged JSONL).


def thinking_parallel_records(seed: int, turns: int) -> tuple[list[Record], Meta]:
    rng = random.Random(seed)
    records: list[Record] = []
    calls = 0
    for turn in range(turns):
        records.append(
            {
                "role": "user",
                "content": f"Investigate flaky test `test_sync_{turn}` in services/sync{turn}/ and fix it. Prefer retries over sleeps.",
            }
        )
        for _ in range(rng.randint(2, 3)):
            reasoning = f"Considering services/sync{turn}. " + words(rng, rng.randint(400, 1200))
            blocks: list[dict[str, Any]] = [
                {"type": "thinking", "thinking": reasoning, "signature": signature(rng)}
            ]
            idents = []
            for _ in range(rng.randint(3, 6)):
                calls += 1
                idents.append(f"toolu_{calls:05d}")
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": idents[-1],
                        "name": "bash",
                        "input": {
                            "command": f"grep -rn 'sleep' services/sync{turn}/file_{calls}.py"
                        },
                    }
                )
            records.append({"role": "assistant", "content": blocks})
            records.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": i,
                            "content": "\n".join(
                                f"services/sync{turn}/file.py:{n}: time.sleep({n % 5})"
                                for n in range(rng.randint(3, 60))
                            ),
                        }
                        for i in idents
                    ],
                }
            )
        records.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": "Done. " + words(rng, 300),
                        "signature": signature(rng),
                    },
                    {
                        "type": "text",
                        "text": f"Fixed `test_sync_{turn}`: replaced `time.sleep` with `retry_until`.",
                    },
                ],
            }
        )
    return records, {
        "system": "You are a coding agent.",
        "model": "claude-sonnet-4-5",
        "tools": [tool("bash", command="string")],
    }


# 606: system messages inside tool loops (abridged JSONL, a model that takes them).


def system_loops_records(seed: int, turns: int) -> tuple[list[Record], Meta]:
    rng = random.Random(seed)
    records: list[Record] = []
    calls = 0
    for turn in range(turns):
        records.append(
            {
                "role": "user",
                "content": f"Deploy build 2026.{turn}.{rng.randint(0, 9)} to staging-{turn % 3} and check health on port {8000 + turn}.",
            }
        )
        records.append(
            {
                "role": "system",
                "content": [
                    {
                        "type": "text",
                        "text": f"Change window {turn} is open until 2026-11-28T{10 + turn % 12}:00Z. Never deploy to production.",
                    }
                ],
            }
        )
        for step in range(rng.randint(2, 4)):
            calls += 1
            ident = f"toolu_{calls:05d}"
            records.append(
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": ident,
                            "name": "shell",
                            "input": {
                                "command": f"deployctl rollout --env staging-{turn % 3} --step {step}"
                            },
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
                            "content": "\n".join(
                                f"[{n:04d}] rollout pod-{n} ready"
                                for n in range(rng.randint(50, 400))
                            ),
                        }
                    ],
                }
            )
            if step == 0:
                records.append(
                    {
                        "role": "system",
                        "content": [
                            {
                                "type": "text",
                                "text": f"Health budget for this rollout: {rng.randint(50, 500)} ms p99.",
                            }
                        ],
                    }
                )
        records.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": f"Build 2026.{turn} is live on staging-{turn % 3}; p99 {rng.randint(40, 400)} ms.",
                    }
                ],
            }
        )
    return records, {
        "system": "You are a release engineer.",
        "model": "claude-opus-4-8",
        "tools": [tool("shell", command="string")],
    }


# 607: thousands of tiny turns (OpenAI chat).


def tiny_turns_records(seed: int, turns: int) -> list[Record]:
    rng = random.Random(seed)
    records: list[Record] = [{"role": "system", "content": "Answer in one word."}]
    for turn in range(turns):
        records.append(
            {
                "role": "user",
                "content": rng.choice(["ok", "next", "y", "n", "?", "go", f"{turn}", "👍"]),
            }
        )
        records.append(
            {"role": "assistant", "content": rng.choice(["ok", "done", "yes", "no", "next", "."])}
        )
    return records


# 608: one enormous output every turn (abridged JSONL).


def enormous_output_records(seed: int, turns: int) -> tuple[list[Record], Meta]:
    rng = random.Random(seed)
    records: list[Record] = []
    for turn in range(turns):
        records.append(
            {
                "role": "user",
                "content": f"Dump the index `idx_{turn}` and tell me its record count; keep the shard at shard-{turn % 7}.",
            }
        )
        ident = f"toolu_dump_{turn:03d}"
        records.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": ident,
                        "name": "dump_index",
                        "input": {"index": f"idx_{turn}"},
                    }
                ],
            }
        )
        rows = [
            json.dumps({"id": n, "k": rng.randbytes(12).hex(), "v": rng.randint(0, 10**9)})
            for n in range(rng.randint(2_000, 6_000))
        ]
        rows.insert(
            len(rows) // 2, f"FATAL: checksum mismatch in idx_{turn} segment {rng.randint(1, 99)}"
        )
        records.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": ident, "content": "\n".join(rows)}
                ],
            }
        )
        records.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": f"`idx_{turn}` holds {len(rows) - 1} records; one segment failed its checksum.",
                    }
                ],
            }
        )
    return records, {
        "system": "You manage search indexes.",
        "model": "claude-sonnet-4-5",
        "tools": [tool("dump_index", index="string")],
    }


# 609: Arabic and Hebrew with emoji sequences and bidi marks (OpenAI chat with tools).

_AR = (
    "طلبي لم يصل بعد 😢",
    "المنتج وصل مكسورًا 💔📦",
    "أريد استرداد المبلغ 💳",
    "العنوان خاطئ، الرجاء التعديل 🏠",
)
_HE = ("ההזמנה שלי עדיין לא הגיעה 😤", "קיבלתי מוצר פגום 🛠️", "אני רוצה לבטל את ההזמנה ❌")
_EMOJI = ("👩🏽‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇸🇦", "🇮🇱", "🧑🏿‍🚀", "❤️‍🔥")


def rtl_emoji_records(seed: int, tickets: int) -> list[Record]:
    rng = random.Random(seed)
    records: list[Record] = [{"role": "system", "content": "أنت مساعد دعم. אתה נציג שירות."}]
    for ticket in range(tickets):
        order = f"ORD-{rng.randint(10000, 99999)}"
        line = rng.choice(_AR + _HE)
        prompt = f"\u202b{line} {rng.choice(_EMOJI)}{rng.choice(_EMOJI)}\u202c رقم الطلب {order} \u200f(מספר {rng.randint(100, 999)})"
        if ticket == 0:
            prompt += " لا تعد أبدًا بأكثر من 200 ريال. Never promise more than 200 SAR."
        records.append({"role": "user", "content": prompt})
        ident = f"call_{ticket:04d}"
        arguments = json.dumps(
            {"order_id": order, "note": f"{line} {rng.choice(_EMOJI)}"}, ensure_ascii=False
        )
        records.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": ident,
                        "type": "function",
                        "function": {"name": "lookup_order", "arguments": arguments},
                    }
                ],
            }
        )
        status = {
            "order": order,
            "status": rng.choice(["قيد الشحن", "נשלח", "ملغى"]),
            "amount": f"{rng.randint(20, 900)} SAR",
            "notes": "\u200e".join(rng.choice(_EMOJI) for _ in range(rng.randint(5, 40))),
        }
        records.append(
            {
                "role": "tool",
                "tool_call_id": ident,
                "content": json.dumps(status, ensure_ascii=False),
            }
        )
        records.append(
            {
                "role": "assistant",
                "content": f"\u202bتم التحقق من {order} {rng.choice(_EMOJI)}\u202c — {status['amount']}",
            }
        )
    return records
