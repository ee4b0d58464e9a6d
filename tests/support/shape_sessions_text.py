"""Helpers of the seventh outside check's sessions (`tests.support.shape_sessions`)."""

from __future__ import annotations

import base64
import random
from typing import Any

Meta = dict[str, Any]


def tool(name: str, **properties: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"The {name} tool.",
        "input_schema": {
            "type": "object",
            "properties": {key: {"type": kind} for key, kind in properties.items()},
        },
    }


def signature(rng: random.Random) -> str:
    return base64.b64encode(rng.randbytes(rng.randint(200, 600))).decode()


def words(rng: random.Random, count: int) -> str:
    vocabulary = [
        "the",
        "invoice",
        "shipment",
        "customer",
        "refund",
        "warehouse",
        "contract",
        "clause",
        "delivery",
        "account",
        "balance",
        "policy",
        "escalation",
        "payment",
        "schedule",
        "tracking",
        "carrier",
        "damaged",
        "replacement",
        "quarter",
        "supplier",
        "agreement",
        "notice",
        "period",
        "renewal",
        "discount",
        "credit",
        "region",
    ]
    return " ".join(rng.choice(vocabulary) for _ in range(count))
