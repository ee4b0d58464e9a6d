# ruff: noqa: E501 (the long lines are the sessions' own text)
"""The eighth outside check's sessions in OpenAI chat: a support agent switching between
open tickets and coming back to the first, and an operations team writing Greek, Thai and
Hebrew with code (`tests.support.eighth_sessions` writes them)."""

from __future__ import annotations

import json
import random

from tests.support.eighth_sessions_ops import Record, babble


def _openai_call(ident: str, name: str, **arguments: str) -> Record:
    function = {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": ident, "type": "function", "function": function}],
    }


# 701: a support agent switching between open tickets (OpenAI chat).


def ticket_switch_records(seed: int, visits: int) -> list[Record]:
    rng = random.Random(seed)
    tickets = [
        {
            "id": f"TCK-{rng.randint(10000, 99999)}",
            "email": f"{babble(rng, 1).replace(' ', '')}.{n}@harbor-mail.example",
            "order": f"ORD-{rng.randint(100000, 999999)}",
            "refund": f"${rng.randint(20, 900)}.{rng.randint(10, 99)}",
            "date": f"2026-{rng.randint(1, 11):02d}-{rng.randint(10, 28)}",
        }
        for n in range(6)
    ]
    records: list[Record] = [
        {"role": "system", "content": "You are a support agent for Harbor Outfitters."},
        {
            "role": "user",
            "content": "Six tickets are open today. Refunds above $500.00 need a supervisor; never refund to a different card than the order's.",
        },
        {
            "role": "assistant",
            "content": "Understood: supervisor above $500.00, original card only.",
        },
    ]
    calls = 0
    order = [n % 6 for n in range(visits - 1)] + [0]
    rng.shuffle(order[6:-1])
    for visit, which in enumerate(order):
        ticket = tickets[which]
        if visit == len(order) - 1:
            prompt = f"Back to {ticket['id']}: what did we refund, to which order, and who asked ({ticket['email']})?"
        else:
            prompt = f"Switch to {ticket['id']} ({ticket['email']}): order {ticket['order']} placed {ticket['date']}; the customer writes: {babble(rng, rng.randint(20, 90))}"
        records.append({"role": "user", "content": prompt})
        for name, arguments in (
            ("get_ticket", {"ticket_id": str(ticket["id"])}),
            ("get_order", {"order_id": str(ticket["order"])}),
        ):
            calls += 1
            ident = f"call_{calls:05d}"
            records.append(_openai_call(ident, name, **arguments))
            body = {
                "ticket": ticket["id"],
                "history": [
                    {
                        "at": f"2026-11-{rng.randint(1, 27):02d}T{rng.randint(0, 23):02d}:00:00Z",
                        "note": babble(rng, rng.randint(5, 30)),
                    }
                    for _ in range(rng.randint(3, 30))
                ],
                "items": [
                    {"sku": f"SKU{rng.randint(0, 99999)}", "price": rng.randint(5, 400)}
                    for _ in range(rng.randint(1, 20))
                ],
            }
            records.append({"role": "tool", "tool_call_id": ident, "content": json.dumps(body)})
        records.append(
            {
                "role": "assistant",
                "content": f"{ticket['id']}: refunded {ticket['refund']} on {ticket['order']} to the original card; confirmation sent to {ticket['email']} on {ticket['date']}.",
            }
        )
    return records


# 707: Greek, Thai and Hebrew prompts with code (OpenAI chat).

_GREEK = [
    "ο",
    "πελάτης",
    "ζητά",
    "αλλαγή",
    "στη",
    "ρύθμιση",
    "του",
    "διακομιστή",
    "και",
    "επιστροφή",
    "χρημάτων",
]
_THAI = "ลูกค้าต้องการเปลี่ยนการตั้งค่าเซิร์ฟเวอร์และขอคืนเงินภายในสัปดาห์นี้"
_HEBREW = ["הלקוח", "מבקש", "לשנות", "את", "הגדרות", "השרת", "ולקבל", "החזר", "כספי"]


def mixed_scripts_records(seed: int, turns: int) -> list[Record]:
    rng = random.Random(seed)
    records: list[Record] = [
        {"role": "system", "content": "You help a multilingual operations team."},
        {
            "role": "user",
            "content": "Κανόνας: ποτέ μην αλλάζεις το timeout πάνω από 30 δευτερόλεπτα. กฎ: ห้ามลบข้อมูลลูกค้า. כלל: לעולם אל תפרסם את המפתח.",
        },
        {
            "role": "assistant",
            "content": "OK: timeout ≤ 30 s, no customer deletions, never publish the key.",
        },
    ]
    for turn in range(turns):
        script = turn % 3
        port = rng.randint(1024, 65000)
        if script == 0:
            prompt = (
                " ".join(rng.choice(_GREEK) for _ in range(rng.randint(10, 60)))
                + f" θύρα {port}, αίτημα {rng.randint(100, 9999)}."
            )
        elif script == 1:
            prompt = (
                "".join(
                    rng.choice([_THAI[i : i + 4] for i in range(0, len(_THAI), 4)])
                    for _ in range(rng.randint(10, 50))
                )
                + f" พอร์ต{port} คำขอ{rng.randint(100, 9999)}"
            )
        else:
            prompt = (
                " ".join(rng.choice(_HEBREW) for _ in range(rng.randint(10, 60)))
                + f" פורט {port}, בקשה {rng.randint(100, 9999)}."
            )
        prompt += f"\n```python\nconfig['timeout_{turn}'] = {rng.randint(1, 30)}\n```"
        records.append({"role": "user", "content": prompt})
        ident = f"call_{turn + 1:05d}"
        records.append(_openai_call(ident, "read_config", service=f"svc-{turn}", note=prompt[:40]))
        records.append(
            {
                "role": "tool",
                "tool_call_id": ident,
                "content": "\n".join(
                    f"{babble(rng, 1)}_{n} = {rng.randint(0, 99)}  # {prompt[n % 20 : n % 20 + 12]}"
                    for n in range(rng.randint(20, 200))
                ),
            }
        )
        records.append(
            {
                "role": "assistant",
                "content": f"svc-{turn}: port {port}, timeout_{turn} set; {prompt[:30]}",
            }
        )
    return records
