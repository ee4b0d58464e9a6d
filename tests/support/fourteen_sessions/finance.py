"""Finance session: a month-end close in spreadsheets and an AP exceptions base
(sheets-close-803)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from tests.support.fourteen_sessions.common import (
    ENGLISH,
    IdGen,
    out_path,
    prose,
    text,
    tool_result,
    tool_use,
    write_abridged,
)

SHEET = "1qZ8xVb3kR0pWm4T7nHs2LdE9yFgJcAu5oNiKe6rBtYw"
VENDORS = [
    "Acme Logistik GmbH",
    "Nordlicht Software AB",
    "Brasserie du Port SARL",
    "Kowalski Transport Sp. z o.o.",
    "Delft Office Supplies BV",
    "Atlas Cloud Ltd",
    "Hoffmann Druckerei KG",
    "Ibérica Catering SL",
    "Baltic Freight OU",
    "Vienna Legal Partners",
]
ACCOUNTS = {
    "6000": "Cost of goods",
    "6200": "Freight",
    "6400": "Software",
    "6600": "Travel",
    "6800": "Legal",
    "7000": "Marketing",
    "4000": "Revenue DE",
    "4100": "Revenue FR",
    "2100": "Accounts payable",
    "1200": "Bank EUR",
}

SYSTEM = (
    "You are the finance operations agent for Helio Components SE. You work in the close "
    "workbook "
    "and the AP exceptions base. Cite amounts exactly as they appear in the books."
)
TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_range",
        "description": "Read a range of a spreadsheet as CSV.",
        "input_schema": {
            "type": "object",
            "properties": {"spreadsheet_id": {"type": "string"}, "range": {"type": "string"}},
        },
    },
    {
        "name": "append_rows",
        "description": "Append rows to a sheet.",
        "input_schema": {
            "type": "object",
            "properties": {
                "spreadsheet_id": {"type": "string"},
                "range": {"type": "string"},
                "values": {"type": "array"},
            },
        },
    },
    {
        "name": "batch_update",
        "description": "Sheets API batchUpdate.",
        "input_schema": {
            "type": "object",
            "properties": {"spreadsheet_id": {"type": "string"}, "requests": {"type": "array"}},
        },
    },
    {
        "name": "airtable_create_record",
        "description": "Create a record in the AP exceptions base.",
        "input_schema": {
            "type": "object",
            "properties": {
                "base_id": {"type": "string"},
                "table": {"type": "string"},
                "fields": {"type": "object"},
            },
        },
    },
]
FIRST_PROMPT = (
    "Let's do the October close for Helio Components SE (entity DE01). Rules: never post to "
    "account 1200 directly, "
    "always book FX differences to 7900, and only use cost centers CC-100 to CC-140. Accruals "
    "above 10.000,00 € need "
    "my approval before posting. Workbook id is " + SHEET + "."
)
ASKS = [
    "Next: reconcile {v} for October.",
    "Book the accruals for {v}.",
    "Check the AP aging tab for {v}.",
    "Why does {v} differ from the bank feed?",
    "Log the {v} mismatch in Airtable and move on.",
    "Format the summary tab and add the totals for {v}.",
]
JOURNAL_MEMOS = ["accrual Oct", "reclass freight", "FX revaluation", "reverse Sep accrual"]
TOTAL_LABELS = [
    "October accruals total",
    "FX differences to 7900",
    "AP open items > 60 days",
    "Freight reclass subtotal",
]
ISSUE_TYPES = ["Duplicate invoice", "Price variance", "Missing PO", "Wrong VAT rate"]
OWNERS = [
    "m.keller@helio-components.eu",
    "a.dubois@helio-components.eu",
    "j.nowak@helio-components.eu",
]


def _eur(x: float) -> str:
    s = f"{x:,.2f}"
    return s.replace(",", "X").replace(".", ",").replace("X", ".") + " €"


def _csv_rows(rnd: random.Random, n: int) -> str:
    rows = ["date,doc_no,vendor,account,cost_center,net,vat,gross,currency,status"]
    for _ in range(n):
        net = rnd.randint(120, 48000) + rnd.randint(0, 99) / 100
        rows.append(
            f"2025-10-{rnd.randint(1, 31):02d},INV-{rnd.randint(20000, 29999)},"
            f"{rnd.choice(VENDORS)},{rnd.choice(list(ACCOUNTS))},"
            f"CC-{rnd.randint(100, 140)},{net:.2f},{net * 0.19:.2f},{net * 1.19:.2f},EUR,"
            f"{rnd.choice(['posted', 'posted', 'open', 'blocked'])}"
        )
    return "\n".join(rows)


def _format_requests(rnd: random.Random, label: str) -> list[dict[str, Any]]:
    return [
        {
            "updateCells": {
                "range": {
                    "sheetId": rnd.randint(1, 9),
                    "startRowIndex": rnd.randint(1, 50),
                    "startColumnIndex": 0,
                },
                "rows": [
                    {
                        "values": [
                            {"userEnteredValue": {"stringValue": label}},
                            {
                                "userEnteredValue": {
                                    "formulaValue": "=SUMIFS(F:F,D:D,"
                                    f'"{rnd.choice(list(ACCOUNTS))}")'
                                }
                            },
                            {"note": f"checked by close bot {rnd.randint(1, 31):02d}/10/25"},
                        ]
                    }
                ],
                "fields": "userEnteredValue,note",
            }
        },
        {
            "repeatCell": {
                "range": {"sheetId": 3, "startRowIndex": 0, "endRowIndex": 1},
                "cell": {
                    "userEnteredFormat": {
                        "textFormat": {"bold": True},
                        "numberFormat": {"type": "CURRENCY", "pattern": "#,##0.00 [$€-de-DE]"},
                    }
                },
                "fields": "userEnteredFormat(textFormat,numberFormat)",
            }
        },
    ]


def sheets_close(out_dir: Path) -> list[Path]:
    """sheets-close-803 (abridged JSONL): a finance agent doing a month-end close in
    spreadsheets.

    It reads ranges (CSV back, 40-200 rows), appends journal rows (`append_rows` with 6-18 rows
    of 7 cells), formats and writes through a Sheets-API style `batch_update` (deeply nested
    `requests`), and logs exceptions in an Airtable base whose field names have spaces
    (`{"fields": {"Vendor Name": ..., "Invoice No": ...}}`). Its prose quotes amounts in
    European and ISO formats, short dates (`31/10/25`) and account codes. The controller's
    rules come in the first prompt.
    """
    rnd = random.Random(803)
    ids = IdGen(rnd)
    msgs: list[dict[str, Any]] = [{"role": "user", "content": FIRST_PROMPT}]

    for step in range(22):
        if step:
            ask = rnd.choice(ASKS).format(v=rnd.choice(VENDORS))
            msgs.append({"role": "user", "content": ask})
        # read
        tid = ids()
        rng = f"'AP Oct'!A{rnd.randint(1, 400)}:J{rnd.randint(401, 900)}"
        msgs.append(
            {
                "role": "assistant",
                "content": [
                    text("Reading the ledger extract."),
                    tool_use(tid, "read_range", spreadsheet_id=SHEET, range=rng),
                ],
            }
        )
        msgs.append(
            {"role": "user", "content": [tool_result(tid, _csv_rows(rnd, rnd.randint(40, 160)))]}
        )
        # append journal rows
        tid = ids()
        rows: list[list[str]] = []
        for _ in range(rnd.randint(6, 18)):
            net = rnd.randint(300, 30000) + rnd.randint(0, 99) / 100
            rows.append(
                [
                    f"{rnd.randint(1, 31):02d}/10/25",
                    f"JE-{rnd.randint(5000, 5999)}",
                    rnd.choice(VENDORS),
                    rnd.choice(list(ACCOUNTS)),
                    f"CC-{rnd.randint(100, 140)}",
                    _eur(net),
                    rnd.choice(JOURNAL_MEMOS),
                ]
            )
        append = tool_use(
            tid, "append_rows", spreadsheet_id=SHEET, range="'Journal'!A:G", values=rows
        )
        msgs.append({"role": "assistant", "content": [append]})
        updated = (
            f'{{"updates": {{"updatedRange": "Journal!A{rnd.randint(100, 900)}'
            f':G{rnd.randint(901, 1200)}", "updatedRows": {len(rows)}}}}}'
        )
        msgs.append({"role": "user", "content": [tool_result(tid, updated)]})
        # batch update with deep nesting, sometimes
        if step % 2 == 0:
            tid = ids()
            label = rnd.choice(TOTAL_LABELS)
            reqs = _format_requests(rnd, label)
            update = tool_use(tid, "batch_update", spreadsheet_id=SHEET, requests=reqs)
            msgs.append({"role": "assistant", "content": [update]})
            msgs.append({"role": "user", "content": [tool_result(tid, '{"replies": [{}, {}]}')]})
        if step % 3 == 1:
            tid = ids()
            v = rnd.choice(VENDORS)
            fields = {
                "Vendor Name": v,
                "Invoice No": f"INV-{rnd.randint(20000, 29999)}",
                "Issue Type": rnd.choice(ISSUE_TYPES),
                "Amount (EUR)": _eur(rnd.randint(100, 20000) + 0.5),
                "Owner Email": rnd.choice(OWNERS),
                "Due Date": f"2025-11-{rnd.randint(1, 28):02d}",
            }
            record = tool_use(
                tid,
                "airtable_create_record",
                base_id="appX7Hk2PqR9sT4vW",
                table="AP Exceptions",
                fields=fields,
            )
            msgs.append({"role": "assistant", "content": [record]})
            rec = f"rec{rnd.getrandbits(56):014x}"
            created = (
                f'{{"id": "{rec}", "createdTime": '
                f'"2025-10-31T{rnd.randint(8, 18):02d}:12:00.000Z"}}'
            )
            msgs.append({"role": "user", "content": [tool_result(tid, created)]})
        net = rnd.randint(2000, 90000) + rnd.randint(0, 99) / 100
        summary = (
            f"Booked {len(rows)} journal lines; October accruals now total {_eur(net)} "
            f"(EUR {net * 1.19:,.2f} gross), posted on {rnd.randint(1, 31):02d}/10/25 and "
            "reversing on 01/11/25. "
            f"The bank feed shows {_eur(net - rnd.randint(10, 900))} against "
            f"{rnd.choice(VENDORS)}, "
            f"so the open difference is {_eur(rnd.randint(10, 900) + 0.37)} on account "
            f"{rnd.choice(list(ACCOUNTS))}. "
            f"FX revaluation at ECB rate {rnd.uniform(1.05, 1.12):.4f} USD/EUR gives "
            f"{_eur(rnd.randint(10, 3000) + 0.11)} to 7900. "
        )
        msgs.append({"role": "assistant", "content": [text(summary + prose(rnd, ENGLISH, 2))]})

    msgs.append(
        {
            "role": "user",
            "content": "Before I sign off: what were my rules, and list the accrual totals you "
            "posted with their dates.",
        }
    )
    recap = (
        "Your rules: never post to 1200 directly, always book FX differences to 7900, only "
        "cost centers CC-100 to CC-140, and accruals above 10.000,00 € need your approval."
    )
    msgs.append({"role": "assistant", "content": [text(recap)]})

    return write_abridged(
        out_path(out_dir, "sheets-close-803.jsonl"),
        msgs,
        system=SYSTEM,
        tools=TOOLS,
        model="claude-sonnet-4-5",
    )
