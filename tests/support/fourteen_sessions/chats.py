"""OpenAI chat sessions: a mobile operator's multilingual support desk (telco-plans-806) and a
day of one-line developer questions (quick-chat-810)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from tests.support.fourteen_sessions.common import out_path, write_openai

PLANS = [
    "UNL-5G-PLUS",
    "UNL-5G-MAX",
    "DATA-30GB-EU",
    "DATA-60GB-EU",
    "FAMILY-4X20",
    "SENIOR-5GB",
    "BIZ-UNL-ROAM",
    "PREPAID-10",
]
LANGS = {
    "es": [
        "Hola, quiero cambiar mi tarifa a algo con más datos, estoy pagando demasiado.",
        "Buenas, mi factura de este mes es el doble de lo normal, ¿por qué?",
        "Me voy a Marruecos dos semanas, ¿funciona el roaming con mi plan?",
    ],
    "de": [
        "Guten Tag, ich möchte meinen Tarif wechseln, ich brauche mehr Datenvolumen.",
        "Meine Rechnung ist viel höher als sonst, können Sie das prüfen?",
        "Ich fahre in die Schweiz, kostet Roaming extra?",
    ],
    "pt": [
        "Olá, quero mudar para um plano com mais dados.",
        "A minha fatura veio muito alta este mês.",
        "Vou viajar para o Brasil, o roaming está incluído?",
    ],
    "en": [
        "Hi, I want a plan with more data, I keep running out.",
        "My bill doubled this month, what happened?",
        "Travelling to the US next week, is roaming included?",
    ],
}
REPLY = {
    "es": "He revisado su cuenta {c}: su tarifa actual es {p} y le propongo {n}, que cuesta "
    "{price} EUR al mes a partir del {date}. He abierto el ticket {t}.",
    "de": "Ich habe Ihr Konto {c} geprüft: Ihr aktueller Tarif ist {p}; ich empfehle {n} für "
    "{price} EUR pro Monat ab dem {date}. Ticket {t} ist angelegt.",
    "pt": "Verifiquei a sua conta {c}: o plano atual é {p} e sugiro {n}, por {price} EUR por "
    "mês a partir de {date}. Abri o pedido {t}.",
    "en": "I checked account {c}: you are on {p}; I suggest {n} at {price} EUR per month from "
    "{date}. I opened ticket {t}.",
}
TELCO_SYSTEM = (
    "You are Movilia's customer care agent. Answer in the customer's language. "
    "Use the tools; never guess prices."
)
FIRST_RULES = (
    "Supervisor note for today: never change a plan without the customer's explicit yes, "
    "always mention the 24-month minimum term on FAMILY plans, and only offer BIZ plans to "
    "business accounts.\n\n"
)
CUSTOMER_NAMES = ["Lucía Fernández", "Jürgen Weiß", "João Conceição", "Amy O'Brien", "Zoë Müller"]
CUSTOMER_EMAILS = [
    "lucia.fernandez@correo.es",
    "j.weiss@posteo.de",
    "joao.c@sapo.pt",
    "amy.obrien@mail.co.uk",
]
BILL_ITEMS = [
    "Roaming data MA",
    "Premium SMS 7997",
    "Plan fee",
    "Device instalment",
    "Int'l call +212",
]


def _call(rnd: random.Random, name: str, **args: Any) -> dict[str, Any]:
    return {
        "id": f"call_{rnd.getrandbits(96):024x}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
    }


def telco_plans(out_dir: Path) -> list[Path]:
    """telco-plans-806 (OpenAI chat): a mobile operator's support desk in Spanish, German,
    Portuguese and English.

    Customers ask about tariffs, roaming and bills; the agent calls `get_customer`,
    `get_plan_details`, `list_available_plans`, `change_plan` (the operator's own names for
    its tariff API), `get_bill` and `create_ticket`, often several in parallel, with plan
    codes, MSISDNs, dates and ticket ids as arguments; bills come back as JSON with line
    items. The supervisor's rules are in the first message.
    """
    rnd = random.Random(806)
    messages: list[dict[str, Any]] = [{"role": "system", "content": TELCO_SYSTEM}]

    for k in range(30):
        lang = rnd.choice(list(LANGS))
        cust = f"CU-{rnd.randint(100000, 999999)}"
        msisdn = f"+{rnd.choice(['34', '49', '351', '44'])}{rnd.randint(600000000, 799999999)}"
        q = rnd.choice(LANGS[lang])
        prompt = f"[{lang}] {q} Mi número / Nummer / number: {msisdn}"
        if k == 0:
            prompt = FIRST_RULES + prompt
        messages.append({"role": "user", "content": prompt})
        cur, new = rnd.sample(PLANS, 2)
        calls = [
            _call(rnd, "get_customer", msisdn=msisdn),
            _call(rnd, "get_plan_details", plan_code=cur),
            _call(
                rnd,
                "list_available_plans",
                region=rnd.choice(["ES", "DE", "PT", "UK"]),
                segment=rnd.choice(["consumer", "business"]),
            ),
        ]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        outs = [
            {
                "customer_id": cust,
                "name": rnd.choice(CUSTOMER_NAMES),
                "segment": rnd.choice(["consumer", "business"]),
                "email": rnd.choice(CUSTOMER_EMAILS),
                "since": f"20{rnd.randint(10, 24)}-{rnd.randint(1, 12):02d}-01",
                "plan_code": cur,
            },
            {
                "plan_code": cur,
                "monthly_eur": rnd.choice([9.99, 19.99, 29.99, 39.99, 59.99]),
                "data_gb": rnd.choice([5, 20, 30, 60, "unlimited"]),
                "roaming_zones": rnd.sample(["EU", "CH", "UK", "US", "MA", "BR"], 3),
                "min_term_months": rnd.choice([0, 12, 24]),
            },
            {
                "plans": [
                    {
                        "plan_code": p,
                        "monthly_eur": rnd.choice([9.99, 19.99, 29.99, 39.99, 59.99, 79.99]),
                        "data_gb": rnd.choice([5, 20, 30, 60, "unlimited"]),
                        "promo": rnd.choice([None, "3 months -50%", "double data"]),
                    }
                    for p in PLANS
                ]
            },
        ]
        for c, o in zip(calls, outs, strict=True):
            content = json.dumps(o, ensure_ascii=False, indent=2)
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": content})
        if rnd.random() < 0.5:
            c2 = _call(rnd, "get_bill", customer_id=cust, period=f"2025-{rnd.randint(6, 10):02d}")
            messages.append({"role": "assistant", "content": None, "tool_calls": [c2]})
            lines: list[dict[str, Any]] = [
                {
                    "desc": rnd.choice(BILL_ITEMS),
                    "amount_eur": round(rnd.uniform(0.5, 90), 2),
                    "date": f"2025-10-{rnd.randint(1, 30):02d}",
                }
                for _ in range(rnd.randint(6, 30))
            ]
            bill = {
                "customer_id": cust,
                "lines": lines,
                "total_eur": round(sum(x["amount_eur"] for x in lines), 2),
            }
            content = json.dumps(bill, ensure_ascii=False)
            messages.append({"role": "tool", "tool_call_id": c2["id"], "content": content})
        date = f"2025-11-{rnd.randint(1, 28):02d}"
        ticket = f"TCK-{rnd.randint(100000, 999999)}"
        c3 = _call(
            rnd,
            "change_plan",
            customer_id=cust,
            new_plan_code=new,
            effective_date=date,
            confirmed_by_customer=True,
        )
        c4 = _call(
            rnd,
            "create_ticket",
            customer_id=cust,
            category=rnd.choice(["tariff_change", "billing_dispute", "roaming_info"]),
            summary=f"{cur} -> {new} requested via chat",
        )
        messages.append({"role": "assistant", "content": None, "tool_calls": [c3, c4]})
        scheduled = json.dumps({"status": "scheduled", "effective_date": date})
        messages.append({"role": "tool", "tool_call_id": c3["id"], "content": scheduled})
        opened = json.dumps({"ticket_id": ticket, "status": "open"})
        messages.append({"role": "tool", "tool_call_id": c4["id"], "content": opened})
        answer = REPLY[lang].format(
            c=cust,
            p=cur,
            n=new,
            price=rnd.choice(["19,99", "29,99", "39,99", "24.99"]),
            date=date,
            t=ticket,
        )
        messages.append({"role": "assistant", "content": answer})

    messages.append(
        {
            "role": "user",
            "content": "End of shift. Which plan changes did you schedule today, and what were "
            "the supervisor's rules?",
        }
    )
    messages.append(
        {
            "role": "assistant",
            "content": "The rules were: never change a plan without the customer's explicit "
            "yes, always mention the 24-month minimum term on FAMILY plans, and only offer BIZ "
            "plans to business accounts.",
        }
    )
    return write_openai(out_path(out_dir, "telco-plans-806.jsonl"), messages)


SVC = ["auth", "billing", "search", "gateway", "worker", "notifier", "reports", "cdn-purger"]
PKG = [
    ("requests", "2.32.3"),
    ("fastapi", "0.115.4"),
    ("pydantic", "2.9.2"),
    ("uvicorn", "0.32.0"),
    ("sqlalchemy", "2.0.36"),
    ("celery", "5.4.0"),
    ("redis", "5.2.0"),
    ("httpx", "0.27.2"),
]
NPM = [
    ("@tanstack/react-query", "5.59.16"),
    ("@types/node", "22.9.0"),
    ("@vitejs/plugin-react", "4.3.3"),
    ("@sentry/browser", "8.37.1"),
]


def _quick_exchange(rnd: random.Random, k: int) -> tuple[str, str]:
    s = rnd.choice(SVC)
    kind = k % 9
    port = rnd.randint(3000, 9999)
    if kind == 0:
        return f"port for {s}?", f"{s} listens on localhost:{port}/healthz"
    if kind == 1:
        p, v = rnd.choice(PKG)
        return f"pin for {p}?", f"pip install {p}=={v}"
    if kind == 2:
        p, v = rnd.choice(NPM)
        return f"which {p.split('/')[-1]}?", f"npm i {p}@{v}"
    if kind == 3:
        timeout = rnd.choice([500, 1500, 3000, 10000])
        return f"env var for {s} timeout?", f"{s.upper().replace('-', '_')}_TIMEOUT_MS={timeout}"
    if kind == 4:
        return f"flag to skip {s} migrations?", f"--skip-{s}-migrations"
    if kind == 5:
        return f"{s} db?", f"postgres://app@{s}-db.dev.internal:{rnd.choice([5432, 6432])}/{s}"
    if kind == 6:
        build = f"build {rnd.randint(1000, 9999)}, commit {rnd.getrandbits(28):07x}"
        return f"last good build of {s}?", build
    if kind == 7:
        return f"grafana for {s}?", f"grafana.dev.internal:3000/d/{s}-{rnd.randint(10, 99)}"
    return f"{s} replicas?", f"replicas {rnd.randint(2, 12)}, max surge {rnd.randint(1, 3)}"


def quick_chat(out_dir: Path) -> list[Path]:
    """quick-chat-810 (OpenAI chat, no tools): 900 very short exchanges between a developer
    and an assistant during a long debugging day: one-line questions and one-line answers,
    each naming one thing (a port, a flag, a version, an env var, an endpoint like
    `localhost:8080/healthz`, a `pip` pin like `requests==2.32.3`, a package
    `@scope/pkg@1.4.2`). The developer states two preferences once, early ("always give me
    the command, not an explanation", "never suggest sudo").
    """
    rnd = random.Random(810)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a terse pair-programming assistant."},
        {
            "role": "user",
            "content": "Quick questions all day. Always give me the command, not an "
            "explanation. Never suggest sudo.",
        },
        {"role": "assistant", "content": "Understood."},
    ]
    for k in range(900):
        q, a = _quick_exchange(rnd, k)
        messages.append({"role": "user", "content": q})
        messages.append({"role": "assistant", "content": a})
    messages.append({"role": "user", "content": "what were my two rules from this morning?"})
    messages.append(
        {
            "role": "assistant",
            "content": "Always give the command, not an explanation; never suggest sudo.",
        }
    )
    return write_openai(out_path(out_dir, "quick-chat-810.jsonl"), messages)
