# ruff: noqa: E501 (the sessions' own text: log lines, code and messages)
"""Sessions in scripts that cost about a token a character or more (docs/evaluation.md,
"Caps that cost the same in every script"), written for that check and never tuned on:

- `ja-coding-601`: a coding agent working for Japanese developers (abridged JSONL): specs
  pasted as prompts, pytest failures and exceptions with Japanese messages, Japanese commit
  messages and file names;
- `ko-travel-602`: a travel desk in Korean (OpenAI chat): families' long itinerary requests,
  flight searches, bookings, fare rules;
- `ru-telecom-603`: a telecom help line in Russian (abridged JSONL): long complaints, line
  tests with router logs, billing errors, tickets whose summaries are Russian arguments;
- `hi-data-604`: a retail chain's data analyst in Hindi (abridged JSONL): SQL with Hindi
  literals, Python, tables and errors in Devanagari;
- `ar-social-605`: a café chain's social-media manager in Arabic with many emoji (OpenAI chat):
  campaign briefs, posts as long string arguments, scheduling and moderation errors.

The files are written to `tests/fixtures/scripts/` (deterministic;
`python -m tests.support.script_sessions DIR` writes them again).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from tests.support.generated_sessions import Record, write_records
from tests.support.script_sessions_text import (
    AR_ANSWER,
    AR_BRANCHES,
    AR_ERRORS,
    AR_LONG,
    AR_POSTS,
    AR_SHORT,
    HI_ANSWER,
    HI_CATEGORIES,
    HI_ERRORS,
    HI_LONG,
    HI_SHORT,
    HI_STATES,
    JA_ANSWER,
    JA_CODE_COMMENTS,
    JA_COMMITS,
    JA_ERRORS,
    JA_MODULES,
    JA_RULES,
    JA_SHORT,
    JA_SPEC,
    JA_WAREHOUSES,
    KO_ANSWER,
    KO_CITIES,
    KO_ERRORS,
    KO_LONG,
    KO_POLICY,
    KO_REQUEST,
    RU_ANSWER,
    RU_ERRORS,
    RU_LONG,
    RU_ROUTER_LOG,
    RU_SHORT,
    RU_TICKET_SUMMARY,
    paragraph,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scripts"


def _use(ident: str, name: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": ident, "name": name, "input": tool_input}


def _result(ident: str, content: str, *, is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": ident, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def _text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def _call(ident: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": ident,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
    }


class _Exchanges:
    """Appends an assistant message of calls and the user message of their results."""

    def __init__(self, records: list[Record], prefix: str) -> None:
        self.records = records
        self.prefix = prefix
        self.calls = 0

    def ident(self) -> str:
        self.calls += 1
        return f"{self.prefix}{self.calls:05d}"

    def step(self, note: str, name: str, tool_input: dict[str, Any], output: str) -> None:
        ident = self.ident()
        error = output.startswith("Traceback") or "Error:" in output.split("\n", 1)[0]
        self.records.append(
            {"role": "assistant", "content": [_text(note), _use(ident, name, **tool_input)]}
        )
        self.records.append({"role": "user", "content": [_result(ident, output, is_error=error)]})


# A coding agent for Japanese developers (abridged JSONL).


def _ja_error(rng: random.Random) -> str:
    return rng.choice(JA_ERRORS).format(
        n=rng.randint(2, 40),
        m=rng.randint(1, 12),
        wh=rng.choice(JA_WAREHOUSES),
        order=rng.randint(100000, 999999),
        sku=rng.randint(1000, 9999),
    )


def _ja_source(rng: random.Random, func: str) -> str:
    lines = ['"""在庫管理サービスのモジュール。"""', "", "from __future__ import annotations", ""]
    for k in range(rng.randint(3, 6)):
        name = func if k == 0 else f"_{func}_helper_{k}"
        lines += [
            f"def {name}(order_id: str, warehouse: str, quantity: int) -> int:",
            f"    {rng.choice(JA_CODE_COMMENTS)}",
            "    stock = repository.stock_of(warehouse)",
            f"    {rng.choice(JA_CODE_COMMENTS)}",
            "    if stock < quantity:",
            '        raise InventoryError(f"在庫が不足しています: {warehouse} {stock} < {quantity}")',
            "    return stock - quantity",
            "",
        ]
    return "\n".join(lines)


def _ja_pytest(rng: random.Random, test_file: str, failed: bool) -> str:
    passed = rng.randint(12, 60)
    if not failed:
        return f"{'.' * passed}\n{passed} passed in {rng.uniform(0.5, 6):.2f}s"
    error = _ja_error(rng)
    test = f"{test_file}::test_{rng.choice(['在庫引当_上限', '倉庫間移動', '設定読み込み', '割引計算', '配送予定日'])}"
    return "\n".join(
        [
            f"{'.' * (passed - 1)}F",
            "=================================== FAILURES ===================================",
            f"____________________ {test.split('::')[1]} ____________________",
            "",
            "    def test_case():",
            ">       assert reserve_stock('ORD-1', 'TKY-03', 12) == 0",
            f"E       {error}",
            "",
            f"{test_file}:{rng.randint(20, 300)}: {error.split(':')[0]}",
            "=========================== short test summary info ============================",
            f"FAILED {test} - {error}",
            f"1 failed, {passed - 1} passed in {rng.uniform(0.5, 6):.2f}s",
        ]
    )


def ja_coding_records(seed: int, tasks: int) -> list[Record]:
    """A coding agent for Japanese developers: a spec pasted as the first prompt with the
    team's rules (one in English), then tasks of short requests and pasted reviews; each
    task reads a file, greps, runs pytest (failures with Japanese messages), edits and
    commits with a Japanese message."""
    rng = random.Random(seed)
    records: list[Record] = []
    steps = _Exchanges(records, f"toolu_ja{seed}_")
    spec = paragraph(rng, JA_SPEC, 14, 20, "")
    records.append(
        {
            "role": "user",
            "content": f"在庫引当ロジックの改修をお願いします。仕様は以下のとおりです。\n\n{spec}\n\n{JA_RULES}",
        }
    )
    for task in range(tasks):
        path, func, feature = rng.choice(JA_MODULES)
        test_file = "tests/test_" + path.rsplit("/", 1)[1]
        if task:
            if rng.random() < 0.3:
                review = paragraph(rng, JA_SPEC, 6, 14, "")
                prompt = f"レビューコメントです。`{func}` について:\n\n{review}"
            else:
                prompt = rng.choice(JA_SHORT).format(
                    feature=feature, func=func, wh=rng.choice(JA_WAREHOUSES), path=path
                )
            records.append({"role": "user", "content": prompt})
        steps.step(f"`{func}` を確認します。", "Read", {"file_path": path}, _ja_source(rng, func))
        pattern = rng.choice([func, feature, "在庫が不足しています"])
        steps.step(
            "呼び出し元を探します。",
            "Grep",
            {"pattern": pattern, "path": "inventory"},
            "\n".join(
                f"{rng.choice(JA_MODULES)[0]}:{rng.randint(10, 400)}:    {pattern}(order_id, warehouse, quantity)"
                for _ in range(rng.randint(2, 8))
            ),
        )
        failed = rng.random() < 0.6
        steps.step(
            "テストを実行します。",
            "Bash",
            {"command": f"pytest {test_file} -q"},
            _ja_pytest(rng, test_file, failed),
        )
        comment = rng.choice(JA_CODE_COMMENTS)
        steps.step(
            "修正します。",
            "Edit",
            {
                "file_path": path,
                "old_string": "    if stock < quantity:",
                "new_string": f"    {comment}\n    if stock + reserved(warehouse) < quantity:",
            },
            f"The file {path} has been updated.",
        )
        if failed:
            steps.step(
                "もう一度テストを実行します。",
                "Bash",
                {"command": f"pytest {test_file} -q"},
                _ja_pytest(rng, test_file, False),
            )
        message = rng.choice(JA_COMMITS)
        steps.step(
            "コミットします。",
            "Bash",
            {
                "command": f'git commit -am "{message}（{feature}、倉庫 {rng.choice(JA_WAREHOUSES)}）"'
            },
            f"[feature/引当改修 {rng.randbytes(4).hex()[:7]}] {message}\n 2 files changed, {rng.randint(3, 40)} insertions(+), {rng.randint(1, 20)} deletions(-)",
        )
        answer = paragraph(rng, JA_ANSWER, 2, 5, "")
        records.append(
            {"role": "assistant", "content": [_text(f"`{func}` を修正しました。{answer}")]}
        )
    return records


# A travel desk in Korean (OpenAI chat).


def ko_travel_records(seed: int, customers: int) -> list[Record]:
    """A travel desk: customers writing Korean, some at length (a family's whole trip), the
    agent searching flights, reading bookings and fare rules, with booking errors."""
    rng = random.Random(seed)
    records: list[Record] = [
        {
            "role": "system",
            "content": "당신은 한빛여행사의 예약 상담원입니다. 항상 존댓말을 사용하세요.",
        }
    ]
    calls = 0

    def call(note: str, name: str, arguments: dict[str, Any], output: str) -> None:
        nonlocal calls
        calls += 1
        ident = f"call_{seed}{calls:05d}"
        records.append(
            {"role": "assistant", "content": note, "tool_calls": [_call(ident, name, arguments)]}
        )
        records.append({"role": "tool", "tool_call_id": ident, "content": output})

    for customer in range(customers):
        code, city = rng.choice(KO_CITIES[4:])
        booking = f"HB{rng.randint(100000, 999999)}"
        opening = (
            "Please always quote the fare rule before changing a booking, and never waive fees without approval.\n\n"
            if customer == 0
            else ""
        )
        if rng.random() < 0.35:
            body = paragraph(rng, KO_LONG, 6, 13, " ")
        else:
            body = paragraph(rng, KO_REQUEST, 1, 3, " ")
        body = body.replace("{dest}", city).replace("{booking}", booking)
        records.append(
            {"role": "user", "content": f"{opening}고객 #{customer} (예약 번호 {booking}):\n{body}"}
        )
        day = rng.randint(1, 28)
        flights = [
            {
                "flight": f"KE{rng.randint(100, 999)}",
                "departure": f"2026-03-{day:02d}T{rng.randint(6, 21):02d}:{rng.choice(['05', '30', '45'])}",
                "seats_left": rng.randint(0, 9),
                "fare_krw": rng.randint(18, 95) * 10_000,
                "note": rng.choice(["직항", "경유 1회 (후쿠오카)", "직항, 기내식 포함"]),
            }
            for _ in range(rng.randint(2, 5))
        ]
        call(
            "항공편을 조회하겠습니다 ✈️",
            "search_flights",
            {
                "origin": "ICN",
                "destination": code,
                "date": f"2026-03-{day:02d}",
                "passengers": rng.randint(1, 5),
            },
            json.dumps(flights, ensure_ascii=False),
        )
        call(
            "예약 내역을 확인하겠습니다.",
            "get_booking",
            {"booking_id": booking},
            json.dumps(
                {
                    "booking_id": booking,
                    "status": rng.choice(["발권 완료", "예약 대기", "결제 완료"]),
                    "passengers": [f"승객 {k + 1}" for k in range(rng.randint(1, 5))],
                    "fare_basis": rng.choice(["YRT", "QNR", "VLOW"]),
                },
                ensure_ascii=False,
            ),
        )
        if rng.random() < 0.6:
            policy = rng.choice(KO_POLICY)
            call(
                "관련 규정을 찾아보겠습니다.",
                "search_policy",
                {"query": policy},
                json.dumps(
                    {
                        "title": policy,
                        "url": f"https://help.hanbit-travel.example.kr/ko/policies/{rng.randint(1000, 9999)}",
                        "text": paragraph(rng, KO_LONG, 2, 4, " "),
                    },
                    ensure_ascii=False,
                ),
            )
        if rng.random() < 0.4:
            error = rng.choice(KO_ERRORS).format(
                flight=flights[0]["flight"],
                n=rng.randint(2, 5),
                m=rng.randint(0, 1),
                booking=booking,
            )
            call(
                "좌석을 변경하겠습니다.",
                "change_booking",
                {"booking_id": booking, "flight": flights[0]["flight"]},
                error,
            )
        answer = paragraph(rng, KO_ANSWER, 2, 4, " ")
        records.append(
            {
                "role": "assistant",
                "content": f"{answer} https://help.hanbit-travel.example.kr/ko/bookings/{booking}",
            }
        )
    return records


# A telecom help line in Russian (abridged JSONL).


def ru_telecom_records(seed: int, calls: int) -> list[Record]:
    """A help line: subscribers writing Russian, some pasting long letters of complaint; the
    agent finds the subscriber, tests the line (router logs, line-test errors), reads
    invoices (billing errors) and opens tickets whose summaries are Russian."""
    rng = random.Random(seed)
    records: list[Record] = []
    steps = _Exchanges(records, f"toolu_ru{seed}_")
    months = ("январь", "февраль", "март", "апрель")
    for n in range(calls):
        phone = f"+7 9{rng.randint(10, 99)} {rng.randint(100, 999)}-{rng.randint(10, 99)}-{rng.randint(10, 99)}"
        account = f"ЛС-{rng.randint(1_000_000, 9_999_999)}"
        ticket = f"INC-{rng.randint(100000, 999999)}"
        opening = (
            "Правила смены: не обещайте компенсацию больше 1000 рублей без согласования со старшим, "
            "и never close a ticket without a line test.\n\n"
            if n == 0
            else ""
        )
        if rng.random() < 0.3:
            body = paragraph(rng, RU_LONG, 6, 13, " ")
        else:
            body = rng.choice(RU_SHORT).format(
                month=rng.choice(months), amount=rng.randint(700, 2500), phone=phone, ticket=ticket
            )
        records.append(
            {"role": "user", "content": f"{opening}Абонент {phone}, договор {account}:\n{body}"}
        )
        steps.step(
            "Ищу абонента.",
            "find_subscriber",
            {"phone": phone},
            json.dumps(
                {
                    "account": account,
                    "name": rng.choice(["Иванов И. П.", "Смирнова А. В.", "Кузнецов Д. С."]),
                    "tariff": rng.choice(["Домашний", "Домашний плюс", "Семейный 100"]),
                    "address": f"г. Казань, ул. Баумана, д. {rng.randint(1, 90)}, кв. {rng.randint(1, 200)}",
                },
                ensure_ascii=False,
            ),
        )
        port = f"dslam-kzn-{rng.randint(1, 40)}/{rng.randint(1, 48)}"
        if rng.random() < 0.5:
            output = (
                rng.choice(RU_ERRORS).format(port=port, n=rng.randint(56, 80), account=account)
                if rng.random() < 0.5
                else "\n".join(rng.choice(RU_ROUTER_LOG) for _ in range(rng.randint(4, 12)))
            )
            steps.step("Запускаю тест линии.", "run_line_test", {"line_id": port}, output)
        if rng.random() < 0.4:
            steps.step(
                "Проверяю счёт.",
                "get_invoice",
                {"account_id": account, "month": f"2026-0{rng.randint(1, 4)}"},
                rng.choice(RU_ERRORS[1:]).format(port=port, n=0, account=account)
                if rng.random() < 0.3
                else json.dumps(
                    {
                        "total_rub": rng.randint(650, 2500),
                        "lines": [
                            {"service": "Интернет «Домашний»", "rub": 650},
                            {"service": "Турбо-режим", "rub": rng.choice([0, 199])},
                        ],
                    },
                    ensure_ascii=False,
                ),
            )
        summary = rng.choice(RU_TICKET_SUMMARY)
        steps.step(
            "Создаю заявку.",
            "create_ticket",
            {
                "account_id": account,
                "summary": summary,
                "priority": rng.choice(["обычный", "срочный"]),
            },
            json.dumps({"ticket": ticket, "status": "создана"}, ensure_ascii=False),
        )
        answer = paragraph(rng, RU_ANSWER, 2, 4, " ")
        records.append(
            {
                "role": "assistant",
                "content": [
                    _text(
                        f"{answer} Номер заявки: {ticket}. https://help.volga-telecom.example.ru/tariffs/{rng.randint(10, 99)}"
                    )
                ],
            }
        )
    return records


# A data analyst in Hindi (abridged JSONL).


def hi_data_records(seed: int, questions: int) -> list[Record]:
    """A retail chain's analyst asking in Hindi, some at length (a quarterly report's
    brief); the agent runs SQL with Hindi literals and Python, reads tables in Devanagari,
    and meets errors whose messages are Hindi."""
    rng = random.Random(seed)
    records: list[Record] = []
    steps = _Exchanges(records, f"toolu_hi{seed}_")
    for n in range(questions):
        state, state2 = rng.sample(HI_STATES, 2)
        if rng.random() < 0.3 or n == 0:
            body = paragraph(rng, HI_LONG, 5, 10, " ")
        else:
            body = rng.choice(HI_SHORT).format(state=state, state2=state2)
        if n == 0:
            body += "\n\nDon't write to the sales tables; only read from them."
        records.append({"role": "user", "content": body})
        category = rng.choice(HI_CATEGORIES)
        query = (
            "SELECT श्रेणी, SUM(कुल_बिक्री) AS बिक्री FROM बिक्री_सारांश "
            f"WHERE राज्य = '{state}' AND श्रेणी = '{category}' AND महीना >= '2025-{rng.randint(1, 9):02d}-01' GROUP BY श्रेणी"
        )
        table = "\n".join(
            ["| श्रेणी | बिक्री (लाख ₹) |", "|---|---|"]
            + [f"| {c} | {rng.uniform(1, 90):.2f} |" for c in rng.sample(HI_CATEGORIES, 3)]
        )
        steps.step("डेटा निकालता हूं।", "run_sql", {"query": query}, table)
        if rng.random() < 0.45:
            error = rng.choice(HI_ERRORS).format(n=rng.randint(13, 31), m=rng.randint(13, 20))
            steps.step(
                "प्रतिशत की गणना करता हूं।",
                "python",
                {
                    "code": f"df = pd.read_sql(q, conn)\ndf['हिस्सा'] = df['बिक्री'] / df['बिक्री'].sum() * 100\nprint(df[df['राज्य'] == '{state}'])"
                },
                'Traceback (most recent call last):\n  File "<stdin>", line 3, in <module>\n'
                + error,
            )
            steps.step(
                "कॉलम का नाम ठीक करके फिर चलाता हूं।",
                "python",
                {
                    "code": "df['हिस्सा'] = (df['बिक्री'] / df['बिक्री'].sum() * 100).round(2)\nprint(df)"
                },
                table.replace("बिक्री (लाख ₹)", "हिस्सा (%)"),
            )
        answer = paragraph(rng, HI_ANSWER, 2, 4, " ")
        records.append({"role": "assistant", "content": [_text(f"{answer}\n\n{table}")]})
    return records


# A social-media manager in Arabic with many emoji (OpenAI chat).


def ar_social_records(seed: int, requests: int) -> list[Record]:
    """A café chain's social-media manager writing Arabic full of emoji, some long campaign
    briefs; the agent schedules posts (long Arabic arguments), reads metrics and searches
    mentions, with scheduling and moderation errors."""
    rng = random.Random(seed)
    records: list[Record] = [
        {
            "role": "system",
            "content": "أنت مساعد إدارة حسابات التواصل الاجتماعي لمقاهي بُن الواحة ☕",
        }
    ]
    calls = 0

    def call(note: str, name: str, arguments: dict[str, Any], output: str) -> None:
        nonlocal calls
        calls += 1
        ident = f"call_{seed}{calls:05d}"
        records.append(
            {"role": "assistant", "content": note, "tool_calls": [_call(ident, name, arguments)]}
        )
        records.append({"role": "tool", "tool_call_id": ident, "content": output})

    for n in range(requests):
        branch = rng.choice(AR_BRANCHES)
        if rng.random() < 0.3:
            body = paragraph(rng, AR_LONG, 5, 10, " ")
        else:
            body = rng.choice(AR_SHORT).format(branch=branch)
        if n == 0:
            body = (
                "Never boost a post without my approval, and don't reply to journalists. 🙏\n\n"
                + body
            )
        records.append({"role": "user", "content": body})
        post = f"P{rng.randint(10_000_000, 99_999_999)}"
        at = f"2026-03-{rng.randint(1, 28):02d}T{rng.randint(17, 23):02d}:00:00+03:00"
        account = rng.choice(["@bun_alwaha", "@bun_alwaha_jeddah"])
        text = rng.choice(AR_POSTS)
        output = (
            rng.choice(AR_ERRORS).format(
                at=at, account=account, tag=rng.choice(["عرض_مجاني", "خصم"])
            )
            if rng.random() < 0.3
            else json.dumps({"post_id": post, "status": "scheduled", "at": at}, ensure_ascii=False)
        )
        call(
            "سأجدول المنشور 📅",
            "schedule_post",
            {"account": account, "text": text, "at": at},
            output,
        )
        if rng.random() < 0.5:
            call(
                "أتحقق من التفاعل 📊",
                "get_metrics",
                {"post_id": post},
                json.dumps(
                    {
                        "likes": rng.randint(50, 9000),
                        "comments": rng.randint(0, 400),
                        "shares": rng.randint(0, 300),
                    }
                ),
            )
        if rng.random() < 0.4:
            call(
                "أبحث في الإشارات 🔎",
                "search_mentions",
                {"query": f"بن الواحة {branch}"},
                json.dumps(
                    [
                        {
                            "user": f"@user{rng.randint(100, 999)}",
                            "text": rng.choice(
                                [
                                    "القهوة باردة 😡",
                                    "أفضل لاتيه في المدينة 😍☕",
                                    "الخدمة بطيئة اليوم 😕",
                                    "👏👏👏",
                                ]
                            ),
                            "url": f"https://social.example.com/p/{rng.randint(10**8, 10**9)}",
                        }
                        for _ in range(rng.randint(1, 4))
                    ],
                    ensure_ascii=False,
                ),
            )
        answer = paragraph(rng, AR_ANSWER, 2, 3, " ")
        records.append(
            {
                "role": "assistant",
                "content": f"{answer} https://studio.social.example.com/posts/{post}",
            }
        )
    return records


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else FIXTURES
    folder.mkdir(parents=True, exist_ok=True)
    print(write_records(ja_coding_records(601, tasks=30), folder / "ja-coding-601.jsonl"))
    print(write_records(ko_travel_records(602, customers=45), folder / "ko-travel-602.jsonl"))
    print(write_records(ru_telecom_records(603, calls=70), folder / "ru-telecom-603.jsonl"))
    print(write_records(hi_data_records(604, questions=50), folder / "hi-data-604.jsonl"))
    print(write_records(ar_social_records(605, requests=80), folder / "ar-social-605.jsonl"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
