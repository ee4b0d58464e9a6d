"""Sessions whose facts are values written in prose (issue 21): an operations agent in English
and a support agent answering in Arabic, Chinese, Hindi, Russian and Korean, each stating
ids, dates, versions, commits, hosts, emails, environment variables and amounts in its
replies, not in backticks, between tool outputs long enough to need compacting at 32k.

    python -m tests.support.value_sessions DIR

They were written after the ledger learned these values, to see them through `simulate` and
`tests.support.fact_kinds`; they check the path end to end, they are not an outside check.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from pathlib import Path

from abridged.domain.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from tests.support.generated_sessions import write_jsonl

SERVICES = ["payments-api", "ledger-sync", "auth-gateway", "search-indexer", "mailer"]


def _log(rng: random.Random, lines: int) -> str:
    return "\n".join(
        f"step {i}: pulled layer sha256:{rng.getrandbits(64):016x} in {rng.randint(1, 900)} ms"
        for i in range(lines)
    )


def _hex(rng: random.Random, digits: int) -> str:
    while True:
        value = f"{rng.getrandbits(4 * digits):0{digits}x}"
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def ops_session(seed: int, turns: int) -> list[Message]:
    """An operations agent: each turn a deploy, a long log, and a reply stating its values."""
    rng = random.Random(seed)
    messages: list[Message] = []
    for turn in range(turns):
        service = SERVICES[turn % len(SERVICES)]
        version = f"v{rng.randint(1, 4)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
        address = f"10.{rng.randint(0, 9)}.{rng.randint(0, 255)}.{rng.randint(2, 250)}"
        host = f"{address}:{rng.choice([8443, 9090, 5432])}"
        ticket = f"OPS-{rng.randint(1000, 9999)}"
        commit = _hex(rng, 7)
        when = f"2026-03-{rng.randint(10, 28)} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
        env = f"{service.upper().replace('-', '_')}_RETRY_LIMIT={rng.randint(2, 9)}"
        mail = f"oncall.{service}@example.org"
        messages.append(Message.user(f"Deploy {service} for ticket {ticket}, please."))
        ident = f"call_{turn:04d}"
        command = f"deploy {service} --to staging"
        messages.append(Message.assistant(ToolUseBlock(ident, "bash", {"command": command})))
        messages.append(Message.user(ToolResultBlock(ident, _log(rng, rng.randint(120, 220)))))
        messages.append(
            Message.assistant(
                TextBlock(
                    f"Deployed {service} {version} (commit {commit}) to {host} at {when}. "
                    f"I set {env}; the on-call contact is {mail} and the change is {ticket}."
                )
            )
        )
    return messages


REPLIES = [
    "تم تأكيد الحجز {code} بتاريخ {date}، المبلغ {money}. سنرسل التفاصيل إلى {mail}.",
    "订单{code}已于{date}确认，金额{money}，详情已发送至{mail}。",
    "बुकिंग {code} की पुष्टि {date} को हुई, राशि {money}; विवरण {mail} पर भेजा गया।",
    "Бронирование {code} подтверждено на {date}, сумма {money}. Письмо отправлено на {mail}.",
    "예약 {code}이(가) {date}에 확정되었고 금액은 {money}입니다. 안내는 {mail}로 보냈습니다.",
]
ASKS = [
    "أريد تغيير حجزي من فضلك.",
    "我想改一下我的预订。",
    "मुझे अपनी बुकिंग बदलनी है।",
    "Хочу изменить бронирование.",
    "예약을 변경하고 싶어요.",
]
MONEY = ["{n} AED", "¥{n}", "₹{n}", "{n} RUB", "₩{n}"]


def support_session(seed: int, turns: int) -> list[Message]:
    """A support agent in five languages: a lookup with a long record, a reply with its values."""
    rng = random.Random(seed)
    messages: list[Message] = []
    for turn in range(turns):
        k = turn % len(REPLIES)
        code = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(4)) + str(
            rng.randint(10, 99)
        )
        date = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        money = MONEY[k].format(n=f"{rng.randint(1, 90)},{rng.randint(100, 999)}")
        mail = f"guest{rng.randint(100, 999)}@example.com"
        messages.append(Message.user(ASKS[k]))
        ident = f"call_{turn:04d}"
        messages.append(
            Message.assistant(ToolUseBlock(ident, "find_booking", {"customer": f"c{turn}"}))
        )
        record = "\n".join(
            f"field_{i}: {rng.getrandbits(48):x} note {rng.randint(0, 10**6)}" for i in range(260)
        )
        messages.append(Message.user(ToolResultBlock(ident, record)))
        reply = REPLIES[k].format(code=code, date=date, money=money, mail=mail)
        messages.append(Message.assistant(TextBlock(reply)))
    return messages


SESSIONS: dict[str, Callable[[], list[Message]]] = {
    "ops-values-701": lambda: ops_session(701, 40),
    "support-values-702": lambda: support_session(702, 40),
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tests.support.value_sessions DIR", file=sys.stderr)
        return 2
    folder = Path(args[0])
    folder.mkdir(parents=True, exist_ok=True)
    for name, make in SESSIONS.items():
        print(write_jsonl(make(), folder / f"{name}.jsonl"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
