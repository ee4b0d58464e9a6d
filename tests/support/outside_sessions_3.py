# ruff: noqa: E501 (the long lines are the sessions' own text: log lines, code and messages)
"""The third outside check's sessions (docs/evaluation.md, "A third outside check").

Shapes neither the shared transcripts nor the two earlier checks have: a support chat in
Japanese and Chinese with emoji (about one character per token), one 150,000-character build
log read early and then many short turns, turns of 8 to 16 parallel calls whose results
include screenshots and fetched pages with empty text, a 20,000-token log pasted as the
prompt, assistant answers of 3,000 to 5,000 tokens, adaptive thinking with
`redacted_thinking`, server tools, citations and `role: "system"` entries, and the user's
rules stated in the first prompts of a long coding session. The files are written to
`tests/fixtures/outside3/` (deterministic; `python -m tests.support.outside_sessions_3 DIR`
writes them again).
"""

from __future__ import annotations

import base64
import json
import random
import sys
from pathlib import Path
from typing import Any

from tests.support.claude_code_logs import Log, text, tool_use
from tests.support.generated_sessions import Record, write_records
from tests.support.outside_sessions_3_text import (
    early_rules_records,
    long_answers_claude_code_log,
    pasted_log_records,
    thinking_system_claude_code_log,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "outside3"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2).decode()


def _signature(rng: random.Random) -> str:
    return base64.b64encode(rng.randbytes(rng.randint(180, 420))).decode()


def _call(ident: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": ident,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
    }


# A support chat in Japanese and Chinese (OpenAI chat format).

_JA = (
    "注文した商品がまだ届きません😢",
    "箱が潰れていて、中のマグカップが割れていました💔",
    "サイズが合わないので交換してほしいです🙏",
    "請求が二重になっているようです😡💳",
    "配送先の住所を変更したいです🏠➡️🏢",
)
_ZH = (
    "我的订单到现在还没有发货，请尽快处理🙏",
    "收到的耳机左边没有声音🎧❌",
    "优惠券 满300减50 没有生效，请帮我看看💰",
    "我想取消订单，但是页面一直显示错误⚠️",
)
_ITEMS = (
    "有田焼マグカップ 2個セット",
    "ワイヤレスイヤホン 黑色",
    "抹茶ラテ 粉末 500g",
    "羊毛ブランケット🐑",
)


def cjk_support_records(seed: int, tickets: int) -> list[Record]:
    """A support agent answering customers who write Japanese or Chinese with emoji:
    order lookups, tracking, refunds that fail past the auto-approval limit, knowledge-base
    links; the rules stated once in the first prompt."""
    rng = random.Random(seed)
    records: list[Record] = [
        {"role": "system", "content": "あなたはECサイト「さくらマーケット」のサポート担当です。"}
    ]
    calls = 0
    for ticket in range(tickets):
        order = f"SK-{rng.randint(10_000_000, 99_999_999)}"
        amount = rng.choice([1_980, 3_480, 12_800, 45_800, 68_000])
        chinese = rng.random() < 0.4
        complaint = rng.choice(_ZH if chinese else _JA)
        opening = (
            "Rules for this shift: never refund more than 30000 JPY without escalating, "
            "always reply in the customer's language, and don't promise delivery dates.\n\n"
            if ticket == 0
            else ""
        )
        body = "\n".join(
            rng.choice(
                [complaint, "よろしくお願いします🙇‍♀️", "谢谢！😊", "急いでいます⏰⏰", "🙏🙏🙏"]
            )
            for _ in range(rng.randint(3, 9))
        )
        prompt = (
            f"{opening}お客様 #{ticket} (注文番号 {order}、金額 {amount}円):\n{complaint}\n{body}"
        )
        records.append({"role": "user", "content": prompt})
        steps: list[tuple[str, dict[str, Any], str]] = [
            ("lookup_order", {"order_id": order}, _order_json(rng, order, amount)),
            (
                "get_tracking",
                {
                    "carrier": "yamato",
                    "tracking_no": f"{rng.randint(1000, 9999)}-{rng.randint(1000, 9999)}-{rng.randint(1000, 9999)}",
                },
                "\n".join(
                    f"2026-11-{d:02d} {rng.randint(8, 20):02d}:{rng.randint(0, 59):02d} "
                    f"{rng.choice(['東京ベース店', '羽田クロノゲート', '大阪主管支店', '配達店'])} "
                    f"{rng.choice(['荷物受付', '輸送中', '配達中', '持戻(ご不在)'])}"
                    for d in range(12, 12 + rng.randint(3, 12))
                ),
            ),
        ]
        if rng.random() < 0.5:
            steps.append(
                (
                    "search_kb",
                    {
                        "query": rng.choice(
                            ["配送遅延 補償", "破損 交換 手順", "退款 流程", "优惠券 无效"]
                        )
                    },
                    json.dumps(
                        [
                            {
                                "title": rng.choice(["破損時の対応", "返金ポリシー", "退款说明"]),
                                "url": f"https://help.sakura-market.example.jp/ja/articles/{rng.randint(360_000_000, 360_999_999)}",
                                "snippet": complaint * rng.randint(2, 6),
                            }
                            for _ in range(rng.randint(2, 5))
                        ],
                        ensure_ascii=False,
                    ),
                )
            )
        refund_error = amount > 30_000
        steps.append(
            (
                "issue_refund",
                {"order_id": order, "amount_jpy": amount, "method": "credit_card"},
                f"RefundError: amount {amount} exceeds auto-approval limit 30000 (order {order})"
                if refund_error
                else json.dumps({"status": "ok", "refund_id": f"RF{rng.randint(100000, 999999)}"}),
            )
        )
        for name, arguments, output in steps:
            calls += 1
            ident = f"call_{seed}{calls:05d}"
            records.append(
                {
                    "role": "assistant",
                    "content": f"`{name}` で確認します🔍",
                    "tool_calls": [_call(ident, name, arguments)],
                }
            )
            records.append({"role": "tool", "tool_call_id": ident, "content": output})
        answer = (
            f"{'您好' if chinese else 'お問い合わせありがとうございます'}🙇 注文 {order} について"
            + (
                "、返金額が上限を超えるため担当者にエスカレーションしました📨"
                if refund_error
                else "、返金手続きが完了しました✅"
            )
            + f" 詳しくは https://help.sakura-market.example.jp/ja/orders/{order} をご覧ください。"
        )
        records.append({"role": "assistant", "content": answer})
    return records


def _order_json(rng: random.Random, order: str, amount: int) -> str:
    items = [
        {
            "sku": f"SKU-{rng.randint(1000, 9999)}",
            "name": rng.choice(_ITEMS),
            "qty": rng.randint(1, 3),
        }
        for _ in range(rng.randint(1, 6))
    ]
    return json.dumps(
        {
            "order_id": order,
            "total_jpy": amount,
            "status": rng.choice(["発送済み", "准备中", "配達完了"]),
            "items": items,
            "address": "東京都渋谷区神南1-2-3 サクラビル 5F 🏢",
            "note": "置き配希望📦",
        },
        ensure_ascii=False,
    )


# One 150,000-character build log, then many short turns (abridged JSONL).

_CRATES = ("tokio", "serde_json", "hyper", "sqlx-core", "tracing-subscriber", "axum", "rustls")


def build_log(rng: random.Random, chars: int) -> str:
    lines: list[str] = []
    size = 0
    step = 0
    while size < chars:
        step += 1
        minute, second = divmod(step, 60)
        stamp = f"2026-11-18T02:{minute % 60:02d}:{second:02d}.{rng.randint(0, 999):03d}Z"
        crate = rng.choice(_CRATES)
        kind = rng.random()
        if kind < 0.6:
            line = f"{stamp}    Compiling {crate} v{rng.randint(0, 1)}.{rng.randint(1, 40)}.{rng.randint(0, 9)}"
        elif kind < 0.85:
            line = f"{stamp} [runner-7] cache miss for target/release/deps/lib{crate.replace('-', '_')}-{rng.randbytes(8).hex()}.rlib"
        else:
            line = f"{stamp} warning: unused variable: `{rng.choice(['ctx', 'retry', 'conn', 'span'])}` --> crates/gateway/src/{rng.choice(['pool', 'router', 'auth'])}.rs:{rng.randint(10, 900)}:{rng.randint(5, 40)}"
        if step == 1400:
            line += (
                "\nerror[E0599]: no method named `try_lock_for` found for struct `tokio::sync::Mutex` in the current scope"
                "\n   --> crates/gateway/src/pool.rs:214:31"
                "\nerror: could not compile `gateway` (lib) due to 1 previous error"
            )
        lines.append(line)
        size += len(line) + 1
    lines.append("##[error]Process completed with exit code 101.")
    return "\n".join(lines)


def giant_output_records(seed: int, turns: int) -> list[Record]:
    """A CI investigation: the whole nightly log (150,000 characters) read once, then
    `turns` short exchanges (greps, small edits, questions about ports and versions)."""
    rng = random.Random(seed)
    records: list[Record] = [
        {
            "role": "user",
            "content": "The nightly build failed again. Find out why from /var/ci/logs/nightly-2026-11-18.log. "
            "Don't restart the staging runners while you look, and only touch crates/gateway.",
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading the whole log first."},
                tool_use("toolu_g0000", "Bash", command="cat /var/ci/logs/nightly-2026-11-18.log"),
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_g0000",
                    "content": build_log(rng, 150_000),
                }
            ],
        },
        {
            "role": "assistant",
            "content": "The build stops at `crates/gateway/src/pool.rs:214`: `try_lock_for` does not "
            "exist on `tokio::sync::Mutex`; it is a `parking_lot` method.",
        },
    ]
    asks = (
        (
            "Which tokio version do we pin?",
            "grep -n '^tokio' crates/gateway/Cargo.toml",
            'tokio = { version = "1.41", features = ["full"] }',
        ),
        (
            "What port does the gateway bind in staging?",
            "grep -rn 'bind' deploy/staging/gateway.env",
            "GATEWAY_BIND=0.0.0.0:8443",
        ),
        (
            "Is the pool timeout still 30 seconds?",
            "grep -n 'acquire_timeout' crates/gateway/src/pool.rs",
            "88:    acquire_timeout: Duration::from_secs(30),",
        ),
        (
            "Run the gateway tests.",
            "cargo test -p gateway --quiet",
            "test result: FAILED. 41 passed; 1 failed; 0 ignored\nthread 'pool::tests::acquire_times_out' panicked at crates/gateway/src/pool.rs:301:9",
        ),
        (
            "Check who changed pool.rs last.",
            "git log -3 --format='%h %an %s' -- crates/gateway/src/pool.rs",
            "9f3c2ab Mei Tanaka use try_lock_for for bounded waits\n1d0e7c4 Omar Haddad pool: max_size 64",
        ),
        (
            "What does clippy say?",
            "cargo clippy -p gateway -- -D warnings",
            "error: this `MutexGuard` is held across an `await` point\n  --> crates/gateway/src/pool.rs:220:13",
        ),
    )
    calls = 0
    for turn in range(turns):
        ask, command, output = asks[turn % len(asks)]
        calls += 1
        ident = f"toolu_g{calls:04d}"
        records.append({"role": "user", "content": f"{ask} (step {turn})"})
        records.append({"role": "assistant", "content": [tool_use(ident, "Bash", command=command)]})
        records.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": ident, "content": output}],
            }
        )
        if turn % 5 == 4:
            calls += 1
            edit = f"toolu_g{calls:04d}"
            records.append(
                {
                    "role": "assistant",
                    "content": [
                        text("Replacing the call with `tokio::time::timeout` around `lock()`."),
                        tool_use(
                            edit,
                            "Edit",
                            file_path="crates/gateway/src/pool.rs",
                            old_string=f"let guard = self.inner.try_lock_for(wait_{turn})?;",
                            new_string=f"let guard = timeout(wait_{turn}, self.inner.lock()).await?;",
                        ),
                    ],
                }
            )
            records.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": edit, "content": "ok"}],
                }
            )
        records.append(
            {"role": "assistant", "content": f"{output.splitlines()[0]} — step {turn} done."}
        )
    return records


# Turns of 8 to 16 parallel calls, screenshots and empty documents among the results.


def fanout_claude_code_log(seed: int, turns: int) -> Log:
    """A Claude Code log where each reply makes 8 to 16 parallel calls (reads, greps, a
    screenshot, a web fetch of an empty page) and the results come back one entry each, in
    another order."""
    rng = random.Random(seed)
    files = [
        f"web/src/components/{n}.tsx"
        for n in ("Cart", "Checkout", "PriceTag", "Header", "Modal", "Toast")
    ]
    files += [f"web/src/hooks/use{n}.ts" for n in ("Cart", "Session", "Flags")]
    log = Log()
    log.user(
        "The checkout page renders the total twice on Safari 17.4. Find why; only use `pnpm`, never `npm`."
    )
    for k in range(turns):
        batch = []
        outputs: list[tuple[str, Any]] = []
        for i in range(rng.randint(8, 16)):
            ident = f"toolu_f{seed}{k:03d}{i:02d}"
            shape = rng.random()
            if shape < 0.5:
                path = rng.choice(files)
                batch.append(tool_use(ident, "Read", file_path=f"/home/dev/shop/{path}"))
                body = "\n".join(
                    f"{n:>5}\t{rng.choice(['export function', 'const', 'return', '  useEffect(() => {', '  }, [total]);'])} "
                    f"{rng.choice(['total', 'formatPrice(cart.total)', 'setTotal', '<PriceTag value={total} />'])}"
                    for n in range(1, rng.randint(12, 60))
                )
                outputs.append((ident, body))
            elif shape < 0.7:
                pattern = rng.choice(["formatPrice", "useCart\\(", "total \\+="])
                batch.append(
                    tool_use(ident, "Grep", pattern=pattern, path="web/src", output_mode="content")
                )
                outputs.append(
                    (
                        ident,
                        "\n".join(
                            f"{rng.choice(files)}:{rng.randint(1, 200)}:  {pattern}"
                            for _ in range(rng.randint(1, 12))
                        ),
                    )
                )
            elif shape < 0.85:
                batch.append(
                    tool_use(
                        ident,
                        "mcp__browser__screenshot",
                        url=f"http://localhost:5173/checkout?case={k}-{i}",
                    )
                )
                outputs.append(
                    (
                        ident,
                        [
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": "image/png",
                                    "data": PNG,
                                },
                            }
                        ],
                    )
                )
            else:
                url = f"https://developer.apple.com/documentation/safari-release-notes/safari-17_4-release-notes#{k}-{i}"
                batch.append(
                    tool_use(
                        ident, "WebFetch", url=url, prompt="What changed in Intl.NumberFormat?"
                    )
                )
                outputs.append(
                    (
                        ident,
                        [
                            {
                                "type": "document",
                                "source": {"type": "text", "media_type": "text/plain", "data": ""},
                                "title": "Safari 17.4 Release Notes",
                            }
                        ],
                    )
                )
        log.assistant(text(f"Checking {len(batch)} places at once (round {k})."), *batch)
        rng.shuffle(outputs)
        log.results(*outputs)
        if k % 3 == 2:
            log.assistant(
                text(
                    f"Round {k}: `PriceTag` renders `total` and `useCart` adds shipping twice when `Intl.NumberFormat` throws on Safari."
                )
            )
            log.user(f"Good. Next look at the hooks, and keep the bundle under 250 kB (round {k}).")
    log.assistant(text("Fixed: `useCart` memoizes the total; `pnpm test` passes."))
    return log


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else FIXTURES
    folder.mkdir(parents=True, exist_ok=True)
    print(write_records(cjk_support_records(501, tickets=40), folder / "cjk-support-501.jsonl"))
    print(write_records(giant_output_records(502, turns=60), folder / "giant-output-502.jsonl"))
    print(fanout_claude_code_log(503, turns=9).write(folder / "fanout-503.log.jsonl"))
    print(write_records(pasted_log_records(504, questions=24), folder / "pasted-log-504.jsonl"))
    print(long_answers_claude_code_log(505, turns=10).write(folder / "long-answers-505.log.jsonl"))
    print(
        thinking_system_claude_code_log(506, turns=20).write(
            folder / "thinking-system-506.log.jsonl"
        )
    )
    print(write_records(early_rules_records(507, tasks=50), folder / "early-rules-507.jsonl"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
