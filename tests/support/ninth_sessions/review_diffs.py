"""Pull requests, diffs and CI logs for the code review session."""

from __future__ import annotations

import random

FILES = [
    "src/billing/invoice.ts",
    "src/billing/taxRates.ts",
    "src/api/client.ts",
    "src/hooks/useSubscription.ts",
    "src/components/PlanPicker.tsx",
    "src/utils/money.ts",
    "src/auth/session.ts",
    "src/workers/syncQueue.ts",
    "src/components/InvoiceTable.tsx",
    "src/api/retry.ts",
    "src/features/onboarding/steps.ts",
    "src/server/routes/webhooks.ts",
]

TS_LINES = [
    "export function {f}(input: {T}): {T} {{",
    "  const {v} = await client.get<{T}>(`/v2/{f}/${{id}}`);",
    "  if (!{v}) throw new Error('{f}: missing');",
    "  return {{ ...{v}, updatedAt: new Date().toISOString() }};",
    "}}",
    "import {{ {f} }} from '../{m}';",
    "  // TODO(#{n}): remove after migration",
    "  const total = lines.reduce((acc, l) => acc + l.amountCents, 0);",
    "  useEffect(() => {{ void {f}(); }}, [{v}]);",
    "  expect({f}({v})).toEqual({{ amountCents: {n} }});",
    "  retries: {n2}, backoffMs: {n3},",
    "type {T} = {{ id: string; amountCents: number; currency: 'EUR' | 'USD' }};",
]

FN = [
    "computeInvoice",
    "applyTax",
    "roundHalfEven",
    "fetchPlans",
    "refreshSession",
    "enqueueSync",
    "formatMoney",
    "retryWithBackoff",
    "verifySignature",
    "nextStep",
]

TYPES = ["Invoice", "TaxRate", "Plan", "Session", "SyncJob", "Money", "WebhookEvent"]

PRS = [
    (
        4127,
        "fix(billing): round VAT per line instead of per invoice",
        "mkovacs",
        ["src/billing/invoice.ts", "src/billing/taxRates.ts", "src/utils/money.ts"],
        [
            "  FAIL  src/__tests__/billing/invoice.test.ts",
            "  ● computeInvoice › rounds half-even per line",
            "    expect(received).toEqual(expected)",
            "    - Expected  - 1",
            "    + Received  + 1",
            '      "totalCents": 11900,',
            "    at Object.<anonymous> (src/__tests__/billing/invoice.test.ts:88:31)",
            "Tests:       1 failed, 412 passed, 413 total",
        ],
    ),
    (
        4131,
        "feat(api): retry idempotent requests with jittered backoff",
        "aolsen",
        ["src/api/client.ts", "src/api/retry.ts"],
        [
            (
                "src/api/retry.ts(42,17): error TS2345: Argument of type 'number | undefined' "
                "is not assignable to parameter of type 'number'."
            ),
            (
                "src/api/client.ts(120,5): error TS2322: Type 'Promise<Response | undefined>' "
                "is not assignable to type 'Promise<Response>'."
            ),
            "Error: Process completed with exit code 2.",
        ],
    ),
    (
        4133,
        "refactor(auth): move session refresh into a hook",
        "priyas",
        ["src/auth/session.ts", "src/hooks/useSubscription.ts", "src/components/PlanPicker.tsx"],
        [
            "  FAIL  src/__tests__/hooks/useSubscription.test.ts",
            "  ● useSubscription › refreshes the session once on mount",
            "    TypeError: Cannot read properties of undefined (reading 'expiresAt')",
            "      at refreshSession (src/auth/session.ts:57:22)",
            "Tests:       1 failed, 418 passed, 419 total",
        ],
    ),
    (
        4140,
        "feat(webhooks): verify Stripe signatures with timing-safe compare",
        "dnguyen",
        ["src/server/routes/webhooks.ts"],
        [
            (
                "ESLint: src/server/routes/webhooks.ts:31:9 error 'crypto' is already "
                "declared in the upper scope  @typescript-eslint/no-shadow"
            ),
            "✖ 1 problem (1 error, 0 warnings)",
        ],
    ),
    (
        4142,
        "perf(sync): batch queue flushes, cap at 500 jobs",
        "mkovacs",
        ["src/workers/syncQueue.ts", "src/api/client.ts"],
        [
            "  FAIL  src/__tests__/workers/syncQueue.test.ts (12.8 s)",
            "  ● syncQueue › flushes at most 500 jobs per batch",
            '    thrown: "Exceeded timeout of 5000 ms for a test.',
            (
                "    Add a timeout value to this test to increase the timeout, if this is a "
                'long-running test."'
            ),
            "      at src/__tests__/workers/syncQueue.test.ts:140:3",
            "Tests:       1 failed, 420 passed, 421 total",
        ],
    ),
    (
        4146,
        "feat(onboarding): add tax id step for EU businesses",
        "lhartmann",
        [
            "src/features/onboarding/steps.ts",
            "src/components/PlanPicker.tsx",
            "src/billing/taxRates.ts",
        ],
        [],
    ),
]


def sha(rng: random.Random, n: int = 40) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def ts_line(rng: random.Random) -> str:
    return rng.choice(TS_LINES).format(
        f=rng.choice(FN),
        T=rng.choice(TYPES),
        v=rng.choice(["inv", "plan", "sess", "job", "res"]),
        m=rng.choice(["money", "client", "retry"]),
        n=rng.randint(100, 9999),
        n2=rng.randint(2, 6),
        n3=rng.choice([100, 250, 500, 1000]),
    )


def diff(rng: random.Random, files: list[str]) -> str:
    out = []
    for f in files:
        out += [
            f"diff --git a/{f} b/{f}",
            f"index {sha(rng, 7)}..{sha(rng, 7)} 100644",
            f"--- a/{f}",
            f"+++ b/{f}",
        ]
        for _ in range(rng.randint(2, 4)):
            start = rng.randint(10, 300)
            out.append(
                f"@@ -{start},{rng.randint(6, 20)} +{start},{rng.randint(6, 24)} @@ "
                f"{rng.choice(['export', 'function', 'describe'])} {rng.choice(FN)}"
            )
            for _ in range(rng.randint(8, 22)):
                out.append(rng.choice([" ", " ", "+", "-"]) + ts_line(rng))
    return "\n".join(out)


def numbered(rng: random.Random, path: str, start: int, n: int) -> str:
    return "\n".join(f"{start + k:>5}  {ts_line(rng)}" for k in range(n))


def ci_log(rng: random.Random, job: str, fails: list[str]) -> str:
    lines = [
        (
            f"{job}\tRun npm "
            f"ci\t2026-02-03T14:{rng.randint(10, 59)}:{rng.randint(10, 59)}."
            f"{rng.randint(1000000, 9999999)}Z "
            f"added {rng.randint(1200, 1800)} packages in {rng.randint(20, 60)}s"
        )
    ]
    for _k in range(rng.randint(40, 80)):
        f = (
            rng.choice(FILES)
            .replace("src/", "src/__tests__/")
            .replace(".tsx", ".test.tsx")
            .replace(".ts", ".test.ts")
        )
        lines.append(
            f"{job}\tRun npm "
            f"test\t2026-02-03T14:{rng.randint(10, 59)}:{rng.randint(10, 59)}."
            f"{rng.randint(1000000, 9999999)}Z "
            f" PASS  {f} ({rng.uniform(0.2, 4):.2f} s)"
        )
    lines += [
        f"{job}\tRun npm test\t2026-02-03T14:44:{rng.randint(10, 59)}.0000000Z {fail}"
        for fail in fails
    ]
    return "\n".join(lines)
