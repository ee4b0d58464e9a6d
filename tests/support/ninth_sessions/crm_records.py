"""CRM records for the renewals session: tools, accounts, contracts, tickets and usage."""

from __future__ import annotations

import json
import random
from typing import Any

from tests.support.ninth_sessions.common import schema

TOOLS = [
    schema("crm_search_accounts", "Search accounts by name, domain or owner.", query="string"),
    schema("crm_get_account", "Get an account record.", account_id="string"),
    schema(
        "crm_get_contract",
        "Get a contract with line items and renewal terms.",
        contract_id="string",
    ),
    schema(
        "crm_list_tickets",
        "List support tickets of an account.",
        account_id="string",
        status="string",
    ),
    schema(
        "usage_report",
        "Product usage for an account over a period.",
        account_id="string",
        period="string",
    ),
    schema(
        "crm_update_opportunity",
        "Update a renewal or expansion opportunity.",
        opportunity_id="string",
        stage="string",
        amount="number",
        currency="string",
        close_date="string",
        note="string",
    ),
    schema(
        "email_draft",
        "Create an email draft in the CSM's outbox (not sent).",
        to="string",
        cc="string",
        subject="string",
        body="string",
    ),
    schema(
        "calendar_create",
        "Create a calendar invite.",
        title="string",
        start="string",
        attendees="string",
    ),
]

FIRST = [
    "Jonas",
    "Marta",
    "Pieter",
    "Claire",
    "Amir",
    "Sofia",
    "Henrik",
    "Giulia",
    "Tomasz",
    "Aoife",
    "Raúl",
    "Ines",
    "Mehmet",
    "Yuki",
]

LAST = [
    "Becker",
    "Lindqvist",
    "de Vries",
    "Moreau",
    "Haddad",
    "Rossi",
    "Nowak",
    "Byrne",
    "García",
    "Costa",
    "Yilmaz",
    "Tanaka",
    "Keller",
    "Jansen",
]

COMPANIES = [
    ("Kestrel Logistics GmbH", "kestrel-logistics.de", "EUR"),
    ("Bluewater Foods BV", "bluewaterfoods.nl", "EUR"),
    ("Arcadia Health Inc.", "arcadiahealth.com", "USD"),
    ("Nordlys Energi AS", "nordlys.no", "EUR"),
    ("Pinecrest Insurance LLC", "pinecrest-ins.com", "USD"),
    ("Maison Lumière SAS", "maisonlumiere.fr", "EUR"),
    ("Ferrovia Digitale S.p.A.", "ferroviadigitale.it", "EUR"),
    ("Quarry & Vale Ltd", "quarryvale.co.uk", "EUR"),
    ("Tidewater Robotics Corp", "tidewater-robotics.com", "USD"),
    ("Sierra Vista Schools", "svschools.org", "USD"),
    ("Helvetia Bau AG", "helvetiabau.ch", "EUR"),
    ("Copperline Media Inc.", "copperline.media", "USD"),
]

MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def person(rng: random.Random, domain: str) -> tuple[str, str]:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    return (
        f"{first} {last}",
        f"{first.lower().replace('ú', 'u')}.{last.lower().replace(' ', '')}@{domain}",
    )


def amt(a: dict[str, Any], x: float | None = None) -> str:
    x = a["arr"] if x is None else x
    return f"€{x:,.2f}" if a["cur"] == "EUR" else f"${x:,.2f}"


def account_json(rng: random.Random, a: dict[str, Any]) -> str:
    return json.dumps(
        {
            "id": a["acc"],
            "name": a["name"],
            "domain": a["domain"],
            "tier": rng.choice(["Growth", "Scale", "Enterprise"]),
            "owner": "lena.okafor@fernhill.io",
            "account_executive": a["ae"],
            "health": a["health"],
            "do_not_contact": a["dnc"],
            "billing_currency": a["cur"],
            "arr": a["arr"],
            "contract_id": a["ctr"],
            "renewal_opportunity": a["opp"],
            "renewal_date": a["renew_iso"],
            "contacts": [
                {
                    "name": a["champ"][0],
                    "email": a["champ"][1],
                    "role": "Champion",
                    "title": rng.choice(["Head of BI", "Data Platform Lead", "Analytics Manager"]),
                },
                {
                    "name": a["exec"][0],
                    "email": a["exec"][1],
                    "role": "Economic buyer",
                    "title": rng.choice(["CFO", "VP Operations", "COO"]),
                },
            ],
            "notes": [
                (
                    f"{rng.choice(['QBR', 'Call', 'Email'])} "
                    f"{2025}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}: "
                )
                + rng.choice(
                    [
                        "asked about SSO pricing",
                        "complained about dashboard load times",
                        "interested in the forecasting add-on",
                        "budget freeze until Q2",
                        "new CIO starting in February",
                        "evaluating a competitor (Lumina BI)",
                    ]
                )
                for _ in range(6)
            ],
            "custom_fields": {
                "nps": rng.randint(-20, 70),
                "onboarding_completed": True,
                "region": rng.choice(["EMEA", "NA"]),
                "sla": rng.choice(["standard", "premium"]),
                "vat_id": f"DE{rng.randint(10**8, 10**9 - 1)}" if a["cur"] == "EUR" else None,
            },
        },
        indent=1,
        ensure_ascii=False,
    )


def contract_json(rng: random.Random, a: dict[str, Any]) -> str:
    items = [
        {"sku": s, "description": d, "quantity": q, "unit_price": p, "currency": a["cur"]}
        for s, d, q, p in [
            (
                "FH-PLAT",
                "Fernhill Platform seat",
                a["seats"],
                round(a["arr"] * 0.8 / a["seats"], 2),
            ),
            ("FH-SSO", "SSO / SCIM add-on", 1, round(a["arr"] * 0.08, 2)),
            ("FH-PREM", "Premium support", 1, round(a["arr"] * 0.12, 2)),
        ]
    ]
    return json.dumps(
        {
            "id": a["ctr"],
            "account_id": a["acc"],
            "start_date": a["renew_iso"].replace("2026", "2025"),
            "end_date": a["renew_iso"],
            "renewal_date": a["renew_long"],
            "auto_renew": rng.choice([True, False]),
            "notice_period_days": rng.choice([30, 60, 90]),
            "price_uplift_cap_pct": rng.choice([3, 5, 7]),
            "line_items": items,
            "total_annual": a["arr"],
            "currency": a["cur"],
            "signed_by": a["exec"][1],
            "payment_terms": "Net 30",
            "po_number": f"PO-{rng.randint(100000, 999999)}",
            "legal_notes": "Clause 14.2: price changes require written notice no later than the "
            "notice period before renewal. "
            "Clause 9.1: data residency EU-Frankfurt (eu-central-1).",
        },
        indent=1,
        ensure_ascii=False,
    )


def tickets_json(rng: random.Random, a: dict[str, Any]) -> str:
    out = []
    for _ in range(rng.randint(4, 9)):
        out.append(
            {
                "id": f"SUP-{rng.randint(10000, 99999)}",
                "subject": rng.choice(
                    [
                        "Dashboard timeout on Sales Overview",
                        "SCIM provisioning fails for nested groups",
                        "Export to XLSX truncates at 100k rows",
                        "Invoice shows wrong VAT rate",
                        "API rate limit 429 during nightly sync",
                        "Scheduled report not delivered",
                        "Row-level security rule ignored for viewer role",
                        "Snowflake connector: JWT token expired",
                    ]
                ),
                "status": rng.choice(["open", "pending", "solved", "solved"]),
                "priority": rng.choice(["low", "normal", "high", "urgent"]),
                "created": f"2025-{rng.randint(9, 12):02d}-{rng.randint(1, 28):02d}",
                "last_update": f"2026-01-{rng.randint(2, 18):02d}",
                "requester": a["champ"][1],
                "csat": rng.choice([None, 2, 4, 5]),
            }
        )
    return json.dumps({"account_id": a["acc"], "tickets": out}, indent=1)


def usage_json(rng: random.Random, a: dict[str, Any]) -> str:
    weeks = [
        {
            "week": f"2025-W{w:02d}",
            "active_users": int(a["used"] * rng.uniform(0.6, 1.0)),
            "queries": rng.randint(2000, 60000),
            "dashboards_viewed": rng.randint(100, 4000),
            "p95_load_s": round(rng.uniform(1.2, 9.5), 2),
        }
        for w in range(40, 53)
    ]
    return json.dumps(
        {
            "account_id": a["acc"],
            "period": "2025-Q4",
            "licensed_seats": a["seats"],
            "assigned_seats": a["used"],
            "weekly": weeks,
            "top_features": ["dashboards", "alerts", "forecasting_beta", "api"][
                : rng.randint(2, 4)
            ],
        },
        indent=1,
    )
