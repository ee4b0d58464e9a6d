"""A CRM renewals agent in OpenAI chat-completions format (s2_crm_renewals)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.ninth_sessions.common import Conv, openai_tool
from tests.support.ninth_sessions.crm_records import (
    COMPANIES,
    MONTHS,
    TOOLS,
    account_json,
    amt,
    contract_json,
    person,
    tickets_json,
    usage_json,
)


def crm_renewals(out_dir: Path) -> list[Path]:
    c = Conv(
        202,
        (
            "You are Aria, the customer-success copilot of Fernhill Analytics (B2B SaaS). "
            "You help CSM Lena Okafor "
            "(lena.okafor@fernhill.io) manage renewals. Use the CRM tools; never send "
            "email, only create drafts. "
            "Today is 2026-01-19."
        ),
        TOOLS,
        model="gpt-4.1",
    )

    rng = c.rng

    accounts: list[dict[str, Any]] = []

    for k, (name, domain, cur) in enumerate(COMPANIES):
        acc = f"ACC-{rng.randint(100000, 999999)}"
        ctr = f"CTR-{rng.randint(20000, 99999)}"
        opp = f"OPP-2026-{rng.randint(1000, 9999)}"
        m, d = rng.randint(1, 9), rng.randint(1, 28)
        arr = rng.randint(18, 240) * 1000
        champ = person(rng, domain)
        exec_ = person(rng, domain)
        ae = (
            rng.choice(["daniel.meyer", "priya.raman", "lucas.ferreira", "hannah.schultz"])
            + "@fernhill.io"
        )
        accounts.append(
            {
                "name": name,
                "domain": domain,
                "cur": cur,
                "acc": acc,
                "ctr": ctr,
                "opp": opp,
                "renew_iso": f"2026-{m:02d}-{d:02d}",
                "renew_long": f"{MONTHS[m - 1]} {d}, 2026",
                "renew_eu": f"{d:02d}/{m:02d}/2026",
                "arr": arr,
                "champ": champ,
                "exec": exec_,
                "ae": ae,
                "seats": rng.randint(40, 900),
                "used": None,
                "dnc": (k == 6),
                "health": rng.choice(["green", "yellow", "red"]),
            }
        )
        accounts[-1]["used"] = int(accounts[-1]["seats"] * rng.uniform(0.35, 1.15))

    c.user(
        "Morning Aria. I need to work through my Q1 renewals today. Ground rules: never "
        "offer more than 15% discount on any renewal "
        "without my explicit sign-off, and always cc the account executive on customer "
        "emails. Don't contact any account marked "
        "do-not-contact. Start by pulling every account I own with a renewal before June 30, 2026."
    )

    res = {
        "results": [
            {
                "id": a["acc"],
                "name": a["name"],
                "renewal_date": a["renew_iso"],
                "arr": a["arr"],
                "currency": a["cur"],
                "health": a["health"],
            }
            for a in accounts
        ],
        "total": len(accounts),
        "query": "owner:lena.okafor@fernhill.io renewal_before:2026-06-30",
    }

    c.call(
        "crm_search_accounts",
        {"query": "owner:lena.okafor@fernhill.io renewal_before:2026-06-30"},
        json.dumps(res, indent=1),
    )

    order = sorted(accounts, key=lambda a: a["renew_iso"])

    c.say(
        "You have 12 renewals before June 30, 2026:\n\n"
        + "\n".join(
            (
                f"- {a['name']} ({a['acc']}): renews {a['renew_long']}, ARR {amt(a)} — health "
                f"{a['health']}"
            )
            for a in order
        )
        + "\n\nTotal ARR up for renewal: "
        f"€{sum(a['arr'] for a in accounts if a['cur'] == 'EUR'):,.2f} plus "
        f"${sum(a['arr'] for a in accounts if a['cur'] == 'USD'):,.2f}. "
        "Shall I start with the earliest?"
    )

    for k, a in enumerate(order):
        ask = rng.choice(
            [
                (
                    f"Let's do {a['name']}. Pull the account, contract, open tickets and Q4 "
                    "usage, then tell me the risk."
                ),
                (
                    f"Next: {a['name']} — full picture please (contract terms, tickets, "
                    f"usage). Renewal is {a['renew_eu']} if I remember right."
                ),
                (
                    f"{a['name']} now. What does the contract say about uplift and notice "
                    "period, and how is usage trending?"
                ),
            ]
        )
        if k == 3:
            ask += " Also, from now on quote amounts in the contract currency only, no conversions."
        if k == 7:
            ask += " Their CFO prefers German, so write the email in German."
        c.user(ask)
        c.calls(
            [
                ("crm_get_account", {"account_id": a["acc"]}, account_json(rng, a)),
                ("crm_get_contract", {"contract_id": a["ctr"]}, contract_json(rng, a)),
            ],
            text=None,
        )
        c.calls(
            [
                (
                    "crm_list_tickets",
                    {"account_id": a["acc"], "status": "all"},
                    tickets_json(rng, a),
                ),
                ("usage_report", {"account_id": a["acc"], "period": "2025-Q4"}, usage_json(rng, a)),
            ]
        )
        util = a["used"] / a["seats"] * 100
        risk = (
            "high"
            if util < 60 or a["health"] == "red"
            else ("medium" if a["health"] == "yellow" else "low")
        )
        c.say(
            f"**{a['name']}** ({a['acc']}, contract {a['ctr']}): renewal on "
            f"{a['renew_long']} ({a['renew_iso']}), ARR {amt(a)}. "
            f"Seat utilisation is {util:.0f}% ({a['used']} of {a['seats']} seats). Health "
            f"is `{a['health']}`; I rate renewal risk **{risk}**. "
            f"Champion is {a['champ'][0]} <{a['champ'][1]}>, economic buyer {a['exec'][0]} "
            f"<{a['exec'][1]}>; AE is {a['ae']}."
            + (
                " ⚠️ This account is marked **do-not-contact** — I won't draft anything to them."
                if a["dnc"]
                else ""
            )
        )
        if a["dnc"]:
            c.user(
                "Right, skip outreach there. Just move the opportunity to 'At risk' with a note."
            )
            c.call(
                "crm_update_opportunity",
                {
                    "opportunity_id": a["opp"],
                    "stage": "At risk",
                    "amount": a["arr"],
                    "currency": a["cur"],
                    "close_date": a["renew_iso"],
                    "note": "DNC flag set by Legal; renewal handled by AE only.",
                },
                json.dumps(
                    {
                        "ok": True,
                        "opportunity_id": a["opp"],
                        "stage": "At risk",
                        "updated_at": "2026-01-19T10:42:11Z",
                    }
                ),
            )
            c.say(f"Moved {a['opp']} to *At risk* with the note. No contact made.")
            continue
        disc = rng.choice([5, 8, 10, 12, 15, 18, 20])
        c.user(
            rng.choice(
                [
                    (
                        f"They asked for {disc}% off. What would the renewal come to? Draft an "
                        "email to the champion with a proposal."
                    ),
                    (
                        f"Propose a renewal with {disc}% discount if they commit to 2 years. "
                        f"Draft the email to {a['exec'][0]}."
                    ),
                    (
                        f"Draft a renewal email to {a['champ'][0]}; we can go up to {disc}% if "
                        "needed, and book a call for next week."
                    ),
                ]
            )
        )
        use = min(disc, 15)
        new = a["arr"] * (1 - use / 100)
        if disc > 15:
            c.say(
                f"{disc}% is above your 15% ceiling, so I'll cap the proposal at 15% "
                "unless you sign off: the renewal would be "
                f"{amt(a, new)} instead of {amt(a)} (a reduction of "
                f"{amt(a, a['arr'] - new)}). Drafting with 15%."
            )
        body = (
            f"Hi {a['champ'][0].split()[0]},\n\nthank you for a great 2025. Your "
            f"subscription ({a['ctr']}) renews on {a['renew_long']}. "
            f"Based on your usage ({a['used']} active seats) we propose a renewal at "
            f"{amt(a, new)} per year ({use}% below list), "
            f"valid until {a['renew_iso']}.\n\nBest regards,\nLena Okafor\nCustomer "
            "Success, Fernhill Analytics"
        )
        if k == 7:
            body = (
                f"Sehr geehrte/r {a['exec'][0]},\n\nvielen Dank für die Zusammenarbeit im "
                f"Jahr 2025. Ihr Vertrag {a['ctr']} verlängert sich am "
                f"{a['renew_eu']}. Wir schlagen eine Verlängerung zu {amt(a, new)} pro "
                f"Jahr vor ({use} % Nachlass).\n\nMit freundlichen Grüßen\nLena Okafor"
            )
        calls = [
            (
                "email_draft",
                {
                    "to": a["champ"][1] if k != 7 else a["exec"][1],
                    "cc": a["ae"],
                    "subject": f"Your Fernhill renewal — {a['renew_long']}",
                    "body": body,
                },
                json.dumps(
                    {
                        "draft_id": f"DRF-{rng.randint(100000, 999999)}",
                        "status": "draft",
                        "folder": "Outbox/Drafts",
                    }
                ),
            )
        ]
        if rng.random() < 0.6:
            start = f"2026-01-{rng.randint(20, 30):02d}T{rng.choice([9, 10, 14, 15])}:00:00+01:00"
            calls.append(
                (
                    "calendar_create",
                    {
                        "title": f"Renewal call — {a['name']}",
                        "start": start,
                        "attendees": f"{a['champ'][1]}, {a['ae']}, lena.okafor@fernhill.io",
                    },
                    json.dumps(
                        {
                            "event_id": f"evt_{rng.randrange(16**10):010x}",
                            "start": start,
                            "conference": f"https://meet.fernhill.io/r/{rng.randrange(16**8):08x}",
                        }
                    ),
                )
            )
        calls.append(
            (
                "crm_update_opportunity",
                {
                    "opportunity_id": a["opp"],
                    "stage": "Proposal sent",
                    "amount": round(new, 2),
                    "currency": a["cur"],
                    "close_date": a["renew_iso"],
                    "note": f"{use}% renewal discount proposed; cc {a['ae']}",
                },
                json.dumps({"ok": True, "opportunity_id": a["opp"], "stage": "Proposal sent"}),
            )
        )
        c.calls(calls)
        c.say(
            f"Draft created to {calls[0][1]['to']} (cc {a['ae']}) proposing {amt(a, new)} "
            f"({use}% off). "
            f"{a['opp']} is now *Proposal sent* with close date {a['renew_iso']}."
            + (f" Call booked for {calls[1][1]['start']}." if len(calls) == 3 else "")
        )

    c.user(
        "Great work. Give me a final table of all 12: account id, renewal date, current "
        "ARR, proposed amount, discount, and next step. "
        "Remember the discount ceiling."
    )

    c.say(
        "| Account | Renewal | ARR | Next step |\n|---|---|---|---|\n"
        + "\n".join(
            (
                f"| {a['acc']} {a['name']} | {a['renew_long']} | {amt(a)} | "
                f"{'At risk (DNC)' if a['dnc'] else 'Proposal sent'} |"
            )
            for a in order
        )
        + "\n\nNo proposal exceeds 15%. All drafts cc the AE; nothing was sent."
    )

    path = c.write_openai(out_dir, "s2_crm_renewals")
    meta = {"tools": [openai_tool(t) for t in TOOLS]}
    meta_path = out_dir / "s2_crm_renewals.meta.json"
    meta_path.write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return [path, meta_path]
