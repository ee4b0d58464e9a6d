"""Sessions built around long pasted documents: a master services agreement reviewed clause
by clause (contract-807) and a 90,000-character renewal export (handover-811)."""

from __future__ import annotations

import base64
import random
from pathlib import Path
from typing import Any

from tests.support.fourteen_sessions.common import (
    ENGLISH,
    out_path,
    prose,
    signature,
    text,
    thinking,
    write_abridged,
    write_openai,
)

TERMS = [
    "Services",
    "Deliverables",
    "Customer Data",
    "Confidential Information",
    "Service Levels",
    "Change Request",
    "Force Majeure Event",
    "Intellectual Property Rights",
    "Personal Data",
    "Subprocessor",
    "Losses",
    "Fees",
]
VERBS = ["shall", "may", "shall not", "will use reasonable endeavours to", "shall promptly"]
ACTS = [
    "provide the Services in accordance with the Service Levels",
    "notify the other Party in writing",
    "indemnify and hold harmless the Customer",
    "maintain insurance with a reputable insurer",
    "return or destroy all Confidential Information",
    "remedy the breach",
    "submit a Change Request",
    "pay the undisputed Fees",
    "permit an audit on reasonable notice",
    "appoint a Subprocessor",
]
HEADINGS = [
    "LIABILITY",
    "INDEMNITIES",
    "TERM AND TERMINATION",
    "DATA PROTECTION",
    "SERVICE LEVELS",
    "FEES AND PAYMENT",
    "CONFIDENTIALITY",
    "AUDIT",
]
CONTRACT_SYSTEM = (
    "You are a senior commercial lawyer's drafting assistant. Be exact; quote clause numbers."
)
CONTRACT_FIRST = (
    "We act for the Customer (Northwind Retail plc) on the MSA with Contoso Cloud Services BV. "
    "Our position, for the whole review: never accept a liability cap below 150% of annual "
    "Fees, "
    "always carve out data protection breaches from the cap, the governing law must stay "
    "English law, "
    "and don't agree to any auto-renewal longer than 12 months. Here is clause 1:\n\n"
)
CONTRACT_LEADS = [
    "Next clause:\n\n",
    "Here is the supplier's redraft:\n\n",
    "Clause below, what do we push back on?\n\n",
    "They sent this back, thoughts?\n\n",
]


def _obligation(rnd: random.Random) -> str:
    party = (
        f"The {rnd.choice(['Supplier', 'Customer', 'Party'])} {rnd.choice(VERBS)} "
        f"{rnd.choice(ACTS)}"
    )
    qualifier = rnd.choice(
        [
            "",
            f" within {rnd.choice([5, 10, 30, 60, 90])} Business Days",
            f" up to EUR {rnd.choice(['250,000', '1,000,000', '2,500,000', '5,000,000'])}",
            f" no later than {rnd.randint(1, 28):02d}/{rnd.randint(1, 12):02d}"
            f"/{rnd.choice([25, 26, 27])}",
            f", subject to clause {rnd.randint(1, 30)}.{rnd.randint(1, 9)}.{rnd.randint(1, 6)}",
        ]
    )
    return party + qualifier + "."


def _clause(rnd: random.Random, num: int, subs: int) -> str:
    out = [f"{num}. {rnd.choice(HEADINGS)}"]
    for s in range(1, subs + 1):
        out.append(f"{num}.{s} " + " ".join(_obligation(rnd) for _ in range(rnd.randint(2, 5))))
        for t in range(rnd.randint(0, 3)):
            out.append(
                f"  {num}.{s}.{t + 1} Notwithstanding the foregoing, {rnd.choice(TERMS)} "
                f"{rnd.choice(VERBS)} {rnd.choice(ACTS)} "
                f"save where the aggregate Losses exceed USD {rnd.randint(1, 900) * 1000:,}.00 "
                "in any Contract Year."
            )
    return "\n".join(out)


def contract(out_dir: Path) -> list[Path]:
    """contract-807 (OpenAI chat, no tools): a lawyer reviewing a master services agreement
    with an assistant, clause by clause.

    The user pastes clauses of 1,500 to 9,000 characters (numbered sub-clauses `14.2.1`,
    defined terms, amounts like `EUR 2,500,000` and `USD 250,000.00`, notice periods, short
    dates `30/06/26`), states the negotiating position once in the first prompt, and asks for
    redlines. The assistant answers with redlines quoting clause numbers, amounts and dates.
    """
    rnd = random.Random(807)
    messages: list[dict[str, Any]] = [{"role": "system", "content": CONTRACT_SYSTEM}]
    for k in range(26):
        num = k + 1
        body = _clause(rnd, num, rnd.randint(3, 14))
        prompt = CONTRACT_FIRST + body if k == 0 else rnd.choice(CONTRACT_LEADS) + body
        messages.append({"role": "user", "content": prompt})
        reply = [f"Comments on clause {num}:"]
        for _ in range(rnd.randint(3, 8)):
            reply.append(
                f"- {num}.{rnd.randint(1, 9)}.{rnd.randint(1, 3)}: "
                f'replace "{rnd.choice(VERBS)} {rnd.choice(ACTS)}" '
                f'with "shall {rnd.choice(ACTS)}"; '
                f"cap at EUR {rnd.choice(['3,750,000', '4,500,000', '6,000,000'])} "
                f"(150% of Fees of EUR {rnd.choice(['2,500,000', '3,000,000', '4,000,000'])}), "
                f"effective {rnd.randint(1, 28):02d}/{rnd.randint(1, 12):02d}"
                f"/{rnd.choice([25, 26])}; notice period {rnd.choice([30, 60, 90])} days."
            )
        reply.append(
            f"Overall risk: {rnd.choice(['low', 'medium', 'high'])}. Suggested fallback: "
            f"USD {rnd.randint(100, 900) * 1000:,}.00 super-cap for data breaches."
        )
        messages.append({"role": "assistant", "content": "\n".join(reply)})

    messages.append(
        {
            "role": "user",
            "content": "Draft the cover email to the supplier listing our non-negotiables as I "
            "gave them at the start, and the caps you proposed for clauses 20 to 26.",
        }
    )
    messages.append(
        {
            "role": "assistant",
            "content": "Non-negotiables: liability cap not below 150% of annual Fees, data "
            "protection breaches carved out, English law, no auto-renewal beyond 12 months.",
        }
    )
    return write_openai(out_path(out_dir, "contract-807.jsonl"), messages)


FIRST = ["Jana", "Omar", "Li", "Sofia", "Mateo", "Aisha", "Tomasz", "Ingrid", "Ravi", "Chloé"]
LAST = ["Kovacs", "Haddad", "Wei", "Rossi", "García", "Bello", "Nowak", "Berg", "Iyer", "Martin"]
COMP = [
    "Northwind",
    "Globex",
    "Initech",
    "Umbrella",
    "Soylent",
    "Hooli",
    "Vandelay",
    "Stark",
    "Wayne",
    "Tyrell",
    "Cyberdyne",
    "Aperture",
]
SUF = ["GmbH", "Ltd", "SA", "BV", "Inc", "AB", "Oy", "SRL"]
SECTORS = ["Logistics", "Health", "Retail", "Energy", "Media", "Foods"]
TIERS = ["Gold", "Silver", "Bronze", "Enterprise"]
PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
    b"2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Contents 4 0 R>>endobj\n"
    b"4 0 obj<</Length 60>>stream\n"
    b"BT /F1 12 Tf 72 720 Td (Pricing policy FY26: max discount 15%) Tj ET\nendstream endobj\n"
    b"trailer<</Root 1 0 R>>\n%%EOF\n"
)
HANDOVER_RULES = (
    "\n\nRules for any renewal offer: never offer more than 15% discount, Enterprise accounts "
    "always need a multi-year option, "
    "and don't mention the price increase to accounts with health red."
)
HANDOVER_SYSTEM = "You are an account-management copilot. Answer from the data the user gave you."

Account = tuple[str, str, str, int, str, str, str, int]


def _accounts(rnd: random.Random) -> list[Account]:
    accounts: list[Account] = []
    for i in range(700):
        fn, ln = rnd.choice(FIRST), rnd.choice(LAST)
        co = f"{rnd.choice(COMP)} {rnd.choice(SECTORS)} {rnd.choice(SUF)}"
        acc = f"ACC-{20000 + i * 7 + rnd.randint(0, 6)}"
        plain_last = ln.lower().replace("í", "i").replace("é", "e")
        email = f"{fn.lower()[0]}.{plain_last}@{co.split(maxsplit=1)[0].lower()}.example"
        mrr = rnd.randint(200, 25000)
        renew = f"2026-{rnd.randint(1, 6):02d}-{rnd.randint(1, 28):02d}"
        accounts.append(
            (acc, co, email, mrr, renew, f"{fn} {ln}", rnd.choice(TIERS), rnd.randint(1, 500))
        )
    return accounts


def handover(out_dir: Path) -> list[Path]:
    """handover-811 (abridged JSONL, thinking on): an account manager pastes a 90,000-character
    quarterly renewal export (CSV of 700 accounts: ids, emails, MRR, renewal dates, owners,
    notes) with a PDF of the pricing policy as a `document` block, then asks 70 short
    questions about individual accounts over the afternoon. Replies open with signed thinking
    and answer with the account's values (`ACC-20931`, `€4,210`, `2026-01-31`,
    `jana.k@northwind.example`). Discount rules are stated once, in the first prompt, after
    the paste.
    """
    rnd = random.Random(811)
    accounts = _accounts(rnd)
    csv = (
        "account_id,company,billing_contact,mrr_eur,renewal_date,owner,tier,seats,health,notes\n"
        + "\n".join(
            f"{a},{c},{e},{m},{r},{o},{t},{s},{rnd.choice(['green', 'amber', 'red'])},"
            f"{prose(rnd, ENGLISH, 1)[: rnd.randint(20, 70)]}"
            for a, c, e, m, r, o, t, s in accounts
        )
    )
    document = {
        "type": "document",
        "source": {
            "type": "base64",
            "media_type": "application/pdf",
            "data": base64.b64encode(PDF * 40).decode(),
        },
        "title": "Pricing policy FY26",
    }
    paste = (
        "Here's the Q1 renewal export, I'll ask about accounts through the afternoon.\n\n"
        + csv
        + HANDOVER_RULES
    )
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": [document, {"type": "text", "text": paste}]}
    ]

    asked = rnd.sample(accounts, 70)
    for acc, co, email, mrr, renew, owner, tier, seats in asked:
        q = rnd.choice(
            [
                f"What's the renewal date and MRR for {acc}?",
                f"Who's the billing contact at {co.split()[0]} ({acc})?",
                f"Draft a one-line offer for {acc}.",
                f"How many seats does {acc} have?",
                f"Is {acc} Enterprise?",
            ]
        )
        msgs.append({"role": "user", "content": q})
        th = f"Look up `{acc}` in the export: {co}, tier {tier}. " + prose(
            rnd, ENGLISH, rnd.randint(2, 6)
        )
        disc = rnd.choice([5, 8, 10, 12, 15])
        ans = (
            f"{acc} ({co}) renews on {renew} at €{mrr:,} MRR, {seats} seats, tier {tier}; "
            f"billing contact {email}, owner {owner}. "
            f"Suggested offer: {disc}% off a {rnd.choice([1, 2, 3])}-year term, "
            f"new MRR €{int(mrr * (1 - disc / 100)):,}."
        )
        msgs.append({"role": "assistant", "content": [thinking(th, signature(rnd)), text(ans)]})

    msgs.append(
        {
            "role": "user",
            "content": "Which discount rules did I give you at the start? And list every account "
            "you suggested 15% for.",
        }
    )
    recap = (
        "Never more than 15%, Enterprise always gets a multi-year option, and no "
        "price-increase mention to red-health accounts."
    )
    msgs.append(
        {
            "role": "assistant",
            "content": [thinking("The rules were after the CSV.", signature(rnd)), text(recap)],
        }
    )
    return write_abridged(
        out_path(out_dir, "handover-811.jsonl"),
        msgs,
        system=HANDOVER_SYSTEM,
        model="claude-opus-4-1",
    )
