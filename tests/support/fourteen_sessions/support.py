"""Shop support desks: a Japanese online shop in OpenAI chat format (ja-shop-802) and a
European electronics returns desk in German, French and Spanish (eu-returns-813)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.fourteen_sessions.common import (
    IdGen,
    out_path,
    text,
    tool_result,
    tool_use,
    write_abridged,
    write_openai,
)

JA_ITEMS = [
    "有田焼マグカップ",
    "ステンレス電気ケトル",
    "北欧風ダイニングチェア",
    "ワイヤレスイヤホン",
    "玄米10キロ",
    "子ども用レインコート",
    "抹茶スイーツ詰め合わせ",
    "ハンドドリップセット",
    "加湿器",
    "羽毛布団シングル",
]
JA_ISSUES = [
    "箱が潰れていて中身が割れていました",
    "届いた色が注文と違います",
    "まだ届いていません",
    "二重に請求されています",
    "サイズが合わないので返品したいです",
    "ポイントが付与されていません",
    "配送先を変更したいです",
    "初期不良で電源が入りません",
]
JA_NAMES = [
    "佐藤",
    "鈴木",
    "高橋",
    "田中",
    "伊藤",
    "渡辺",
    "山本",
    "中村",
    "小林",
    "加藤",
    "吉田",
    "山田",
]
JA_SYSTEM = (
    "あなたはオンラインショップ「みどり商店」のカスタマーサポート担当です。"
    "丁寧な日本語で回答してください。"
)
JA_FIRST = (
    "本日のシフトのルールです。返金は30000円を超える場合は必ず上長に"
    "エスカレーションしてください。"
    "配達日はお約束しないでください。"
    "クーポンコードは1回の問い合わせにつき1枚だけ発行してください。\n\n"
)


def _ja_call(rnd: random.Random, counter: Iterator[int], name: str, **args: Any) -> dict[str, Any]:
    return {
        "id": f"call_{next(counter):04d}{rnd.getrandbits(40):010x}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
    }


def ja_shop(out_dir: Path) -> list[Path]:
    """ja-shop-802 (OpenAI chat): a Japanese online shop's support agent.

    The customers write short Japanese messages; the agent looks orders up (parallel calls:
    order, shipment, payment), and answers in long polite Japanese sentences with the amounts,
    points and days written straight after the words, without spaces
    (`ご注文いただいた商品の返金予定額は合計3480円`), as Japanese is written. Refund rules are
    stated once by the supervisor in the first message.
    """
    rnd = random.Random(802)
    n_call = iter(range(10**6))
    messages: list[dict[str, Any]] = [{"role": "system", "content": JA_SYSTEM}]
    for k in range(34):
        name = rnd.choice(JA_NAMES)
        order = f"MD-{rnd.randint(10**7, 10**8 - 1)}"
        item = rnd.choice(JA_ITEMS)
        price = rnd.choice([1280, 2480, 3480, 5980, 8800, 12800, 19800, 32800, 45000])
        qty = rnd.randint(1, 3)
        issue = rnd.choice(JA_ISSUES)
        prompt = (
            f"{name}様からのお問い合わせ（注文番号 {order}）:\n"
            f"{item}を{qty}点注文しました。{issue}。どうすればいいですか？"
        )
        if k == 0:
            prompt = JA_FIRST + prompt
        messages.append({"role": "user", "content": prompt})
        calls = [
            _ja_call(rnd, n_call, "lookup_order", order_id=order),
            _ja_call(rnd, n_call, "get_shipment", order_id=order),
            _ja_call(rnd, n_call, "get_payment", order_id=order),
        ]
        messages.append(
            {"role": "assistant", "content": "ご注文の状況を確認いたします。", "tool_calls": calls}
        )
        tracking = f"{rnd.randint(10**11, 10**12 - 1)}"
        order_json = {
            "order_id": order,
            "customer": name,
            "items": [
                {
                    "sku": f"SKU-{rnd.randint(1000, 9999)}",
                    "name": item,
                    "qty": qty,
                    "unit_price_jpy": price,
                }
            ],
            "total_jpy": price * qty,
            "points_used": rnd.choice([0, 100, 500]),
            "status": rnd.choice(["配達完了", "発送済み", "準備中"]),
            "history": [
                {
                    "at": f"2025-10-{rnd.randint(1, 28):02d}T{rnd.randint(8, 20):02d}"
                    f":{rnd.randint(0, 59):02d}:00+09:00",
                    "event": e,
                }
                for e in ["注文受付", "決済完了", "出荷", "配達"]
            ],
        }
        ship_json = {
            "carrier": rnd.choice(["ヤマト運輸", "佐川急便", "日本郵便"]),
            "tracking_no": tracking,
            "events": [
                {
                    "at": f"2025-10-{rnd.randint(1, 28):02d} {rnd.randint(8, 20):02d}"
                    f":{rnd.randint(0, 59):02d}",
                    "place": rnd.choice(
                        ["東京ベース", "大阪中継センター", "福岡営業所", "札幌センター"]
                    ),
                    "status": rnd.choice(["輸送中", "到着", "配達中", "持ち戻り"]),
                }
                for _ in range(rnd.randint(4, 9))
            ],
        }
        pay_json = {
            "method": rnd.choice(["クレジットカード", "コンビニ払い", "PayPay"]),
            "charged_jpy": price * qty * rnd.choice([1, 1, 1, 2]),
            "captures": [
                {"id": f"cap_{rnd.getrandbits(48):012x}", "amount_jpy": price * qty}
                for _ in range(rnd.choice([1, 1, 2]))
            ],
        }
        for c, body in zip(calls, [order_json, ship_json, pay_json], strict=True):
            content = json.dumps(body, ensure_ascii=False, indent=2)
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": content})
        total = price * qty
        refund = total if total <= 30000 else 30000
        if rnd.random() < 0.6:
            rc = _ja_call(
                rnd, n_call, "issue_refund", order_id=order, amount_jpy=refund, reason=issue[:20]
            )
            messages.append({"role": "assistant", "content": None, "tool_calls": [rc]})
            refund_body = {"refund_id": f"RF-{rnd.randint(10**6, 10**7)}", "status": "accepted"}
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": rc["id"],
                    "content": json.dumps(refund_body, ensure_ascii=False),
                }
            )
        pts = rnd.randint(10, 900)
        days = rnd.randint(3, 14)
        answer = (
            f"{name}様、このたびはご不便をおかけして大変申し訳ございません。"
            f"ご注文いただいた{item}の返金予定額は合計{refund}円となり、"
            "お支払いに使われたカードへの返金処理には"
            f"通常営業日で最大{days}日ほどかかる見込みです。"
            "また今回のお詫びとしてお客様のアカウントへ"
            f"付与いたしますポイントは{pts}ポイントです。"
            f"配送状況につきましては追跡番号{tracking}でご確認いただけます。"
            f"クーポンコード{rnd.choice(['MIDORI', 'SORRY', 'THANKS'])}{rnd.randint(100, 999)}"
            "をお送りいたしますので次回のお買い物でご利用くださいませ。"
            "ほかにご不明な点がございましたらお気軽にお問い合わせください。"
        )
        if total > 30000:
            answer += (
                "なお返金額が30000円を超えるため上長へエスカレーションいたしました。"
                "担当者から改めてご連絡いたします。"
            )
        messages.append({"role": "assistant", "content": answer})

    messages.append(
        {
            "role": "user",
            "content": "最初に伝えたシフトのルールをもう一度まとめて、"
            "今日エスカレーションした注文番号を一覧にしてください。",
        }
    )
    messages.append(
        {
            "role": "assistant",
            "content": "本日のルールは、30000円を超える返金は上長にエスカレーションすること、"
            "配達日を約束しないこと、クーポンは1回につき1枚までです。",
        }
    )
    return write_openai(out_path(out_dir, "ja-shop-802.jsonl"), messages)


EU_PRODUCTS = [
    ("Kaffeevollautomat BX-900", 849.0),
    ("Staubsauger-Roboter R7", 399.99),
    ('OLED-TV 55"', 1299.0),
    ("Kopfhörer NC-2", 249.5),
    ("Waschmaschine 8kg", 629.0),
    ("Smartwatch S4", 199.0),
    ("Mixeur Pro 1200", 159.9),
    ("Portátil Air 14", 1099.0),
]
EU_LANG = ["de", "fr", "es"]
EU_RULES = (
    "Regeln für heute / rules for today: never refund before the item is scanned at the "
    "warehouse, always offer a repair first for "
    "items older than 30 days, and only send SMS between 08:00 and 20:00.\n\n"
)
EU_SYSTEM = (
    "Du bist der Retouren-Assistent von Elektro Kranz. "
    "Antworte in der Sprache der Kundin oder des Kunden."
)


def _eur(x: float) -> str:
    return f"{x:,.2f}".replace(",", "X").replace(".", ",").replace("X", ".") + " €"


def _email(
    rnd: random.Random, lang: str, order: str, prod: str, price: float, date: str, trk: str
) -> str:
    filler = {
        "de": "Ich habe das Gerät nur zweimal benutzt und es macht seitdem ein lautes Geräusch "
        "beim Einschalten. Die Verpackung habe ich noch. ",
        "fr": "J'ai utilisé l'appareil deux fois seulement et il fait un bruit fort au "
        "démarrage. J'ai encore l'emballage d'origine. ",
        "es": "Solo he usado el aparato dos veces y hace un ruido fuerte al encenderse. "
        "Todavía tengo el embalaje original. ",
    }[lang]
    head = {
        "de": f"Sehr geehrte Damen und Herren,\n\nam {date} habe ich bei Ihnen {prod} "
        f"(Bestellnummer {order}) für {_eur(price)} gekauft, Sendungsnummer {trk}. ",
        "fr": f"Bonjour,\n\nle {date} j'ai commandé {prod} (commande {order}) pour "
        f"{_eur(price)}, suivi Colissimo {trk}. ",
        "es": f"Hola,\n\nel {date} compré {prod} (pedido {order}) por {_eur(price)}, "
        f"número de seguimiento {trk}. ",
    }[lang]
    tail = {
        "de": "Bitte erstatten Sie den Betrag auf mein Konto (IBAN endet auf 4471).\n\n"
        "Mit freundlichen Grüßen",
        "fr": "Merci de me rembourser sur mon compte (IBAN se terminant par 4471).\n\nCordialement",
        "es": "Por favor, reembolsen el importe a mi cuenta (IBAN terminado en 4471).\n\nSaludos",
    }[lang]
    return head + filler * rnd.randint(1, 5) + tail


def eu_returns(out_dir: Path) -> list[Path]:
    """eu-returns-813 (abridged JSONL): a returns desk for a European electronics shop, in
    German, French and Spanish.

    Customers write e-mails of 80-300 words (order numbers, dates written `14.03.25` or
    `14/03/2025`, amounts `1.234,56 €`, IBAN fragments, DHL/Colissimo tracking); the agent
    calls `lookup_order`, `create_return` and notifies by `send_sms` with a one-line `body`,
    and answers in the customer's language quoting the return id, the refund amount and the
    pickup date. Team rules are stated once at the start of the shift.
    """
    rnd = random.Random(813)
    ids = IdGen(rnd)
    msgs: list[dict[str, Any]] = []
    for k in range(32):
        lang = rnd.choice(EU_LANG)
        order = f"{rnd.randint(300, 399)}-{rnd.randint(1000000, 9999999)}"
        prod, price = rnd.choice(EU_PRODUCTS)
        date = rnd.choice(
            [
                f"{rnd.randint(1, 28):02d}.{rnd.randint(1, 10):02d}.25",
                f"{rnd.randint(1, 28):02d}/{rnd.randint(1, 10):02d}/2025",
            ]
        )
        trk = f"{rnd.randint(10**11, 10**12 - 1)}"
        prompt = _email(rnd, lang, order, prod, price, date, trk)
        msgs.append({"role": "user", "content": (EU_RULES + prompt) if k == 0 else prompt})
        t1, t2, t3 = ids(), ids(), ids()
        msgs.append(
            {"role": "assistant", "content": [tool_use(t1, "lookup_order", order_no=order)]}
        )
        looked_up = {
            "order_no": order,
            "items": [{"name": prod, "price_eur": price, "qty": 1}],
            "delivered": f"2025-{rnd.randint(1, 10):02d}-{rnd.randint(1, 28):02d}",
            "customer": {
                "phone": f"+{rnd.choice(['49', '33', '34'])}{rnd.randint(10**9, 10**10 - 1)}",
                "lang": lang,
            },
            "warehouse_scan": rnd.choice([None, "2025-10-20T09:14:00Z"]),
        }
        msgs.append(
            {
                "role": "user",
                "content": [tool_result(t1, json.dumps(looked_up, ensure_ascii=False))],
            }
        )
        ret = f"R-{rnd.randint(10000, 99999)}"
        pickup = f"{rnd.randint(1, 28):02d}.11.25"
        msgs.append(
            {
                "role": "assistant",
                "content": [
                    tool_use(
                        t2,
                        "create_return",
                        order_no=order,
                        reason=rnd.choice(["defect_noise", "not_as_described", "late_delivery"]),
                        pickup_date=pickup,
                    ),
                    tool_use(
                        t3,
                        "send_sms",
                        to=f"+{rnd.choice(['49', '33', '34'])}{rnd.randint(10**9, 10**10 - 1)}",
                        body=f"Retoure {ret} angelegt, Abholung am {pickup}. "
                        f"Etikett: dhl.example/r/{rnd.getrandbits(24):06X}",
                    ),
                ],
            }
        )
        label = {
            "return_id": ret,
            "label_url": f"https://returns.example.eu/label/{ret}.pdf",
        }
        msgs.append(
            {
                "role": "user",
                "content": [
                    tool_result(t2, json.dumps(label)),
                    tool_result(t3, '{"status": "queued"}'),
                ],
            }
        )
        refund = price * rnd.choice([1, 1, 0.9])
        ans = {
            "de": f"Guten Tag, wir haben die Retoure {ret} für Bestellung {order} angelegt. "
            f"Abholung am {pickup} zwischen 08:00 und 12:00; nach dem Scan im Lager erstatten "
            f"wir {_eur(refund)} innerhalb von 5 Werktagen.",
            "fr": f"Bonjour, le retour {ret} pour la commande {order} est créé. "
            f"Enlèvement le {pickup} entre 08:00 et 12:00 ; après contrôle à l'entrepôt nous "
            f"remboursons {_eur(refund)} sous 5 jours ouvrés.",
            "es": f"Hola, hemos creado la devolución {ret} del pedido {order}. "
            f"Recogida el {pickup} entre las 08:00 y las 12:00; tras el escaneo en almacén "
            f"reembolsaremos {_eur(refund)} en 5 días hábiles.",
        }[lang]
        msgs.append({"role": "assistant", "content": [text(ans)]})

    msgs.append(
        {
            "role": "user",
            "content": "Schichtende: list all returns you created with their pickup dates, "
            "and repeat today's rules.",
        }
    )
    recap = (
        "Rules: no refund before the warehouse scan, offer repair first for items older "
        "than 30 days, SMS only between 08:00 and 20:00."
    )
    msgs.append({"role": "assistant", "content": [text(recap)]})
    return write_abridged(
        out_path(out_dir, "eu-returns-813.jsonl"),
        msgs,
        system=EU_SYSTEM,
        model="claude-haiku-4-5",
    )
