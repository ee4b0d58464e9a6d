"""A code review of GitHub PRs with signed thinking (s6_code_review_thinking)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.ninth_sessions.common import Conv, schema
from tests.support.ninth_sessions.review_diffs import (
    FN,
    PRS,
    ci_log,
    diff,
    numbered,
    sha,
)

BILLING_NOTE = "Touches src/billing/ without a test change."


def code_review_thinking(out_dir: Path) -> list[Path]:
    c = Conv(
        606,
        (
            "You are a senior TypeScript reviewer for the orbit-web monorepo "
            "(github.com/orbitly/orbit-web). Review PRs carefully, run CI "
            "log checks, and post review comments with file:line references. Use the bash "
            "tool for gh and git."
        ),
        [
            schema("bash", "Run a shell command in the repo checkout.", command="string"),
            schema(
                "read_file",
                "Read lines of a file at the PR head.",
                path="string",
                start_line="integer",
                end_line="integer",
            ),
            schema(
                "post_review_comment",
                "Post an inline review comment on a PR.",
                pr="integer",
                path="string",
                line="integer",
                body="string",
            ),
            schema(
                "submit_review", "Submit a review.", pr="integer", event="string", body="string"
            ),
        ],
        model="claude-opus-4-1-20250805",
    )

    rng = c.rng

    c.user(
        "Please review the open PRs labelled `needs-review` in orbitly/orbit-web. For "
        "each: read the diff, check CI, post inline comments for real "
        "problems only (no nitpicks about naming), and request changes if CI is red. "
        "Never approve a PR that touches src/billing/ without a test "
        "change. Use the exact file:line format like src/api/client.ts:120 in comments."
    )

    c.call(
        "bash",
        {
            "command": (
                "gh pr list --repo orbitly/orbit-web --label needs-review --json "
                "number,title,author,headRefOid,updatedAt --limit 20"
            )
        },
        json.dumps(
            [
                {
                    "number": n,
                    "title": t,
                    "author": {"login": a},
                    "headRefOid": sha(rng),
                    "updatedAt": (
                        f"2026-02-0{rng.randint(1, 3)}T{rng.randint(8, 18)}:{rng.randint(10, 59)}"
                        ":00Z"
                    ),
                }
                for n, t, a, _, _ in PRS
            ],
            indent=1,
        ),
        thinking=(
            "Six PRs with `needs-review`. I'll go one at a time: `gh pr view`, `gh pr diff`, "
            "then the CI run for the head SHA. The billing rule matters for #4127 and #4146."
        ),
    )

    c.say(
        "Six PRs are labelled `needs-review`: "
        + ", ".join(f"#{n} ({t})" for n, t, *_ in PRS)
        + ". Starting with #4127."
    )

    for k, (num, title, author, files, fails) in enumerate(PRS):
        head = sha(rng)
        run_id = rng.randint(12_000_000_000, 13_000_000_000)
        if k > 0:
            c.user(
                rng.choice(
                    [
                        f"Next, #{num}.",
                        f"Go on with #{num} please.",
                        f"#{num} now — {author} says it's urgent.",
                    ]
                )
            )
        c.call(
            "bash",
            {
                "command": (
                    f"gh pr view {num} --repo orbitly/orbit-web --json "
                    "title,body,headRefOid,files,statusCheckRollup"
                )
            },
            json.dumps(
                {
                    "title": title,
                    "body": (
                        f"Closes #{num - rng.randint(20, 200)}.\n\n{title}. Tested locally "
                        f"with `npm test -- {files[0].split('/')[-1].split('.')[0]}`."
                    ),
                    "headRefOid": head,
                    "files": [
                        {
                            "path": f,
                            "additions": rng.randint(3, 120),
                            "deletions": rng.randint(0, 60),
                        }
                        for f in files
                    ],
                    "statusCheckRollup": [
                        {
                            "name": j,
                            "conclusion": ("FAILURE" if fails and j == "test" else "SUCCESS"),
                            "detailsUrl": (
                                f"https://github.com/orbitly/orbit-web/actions/runs/{run_id}/job/"
                                f"{rng.randint(10**10, 10**11)}"
                            ),
                        }
                        for j in ["lint", "typecheck", "test", "build"]
                    ],
                },
                indent=1,
            ),
            thinking=f"Looking at #{num} `{title}`. Head `{head[:12]}`.",
        )
        c.call("bash", {"command": f"gh pr diff {num} --repo orbitly/orbit-web"}, diff(rng, files))
        line = rng.randint(40, 260)
        c.call(
            "read_file",
            {"path": files[0], "start_line": line - 20, "end_line": line + 30},
            numbered(rng, files[0], line - 20, 50),
            thinking=(
                f"The change in `{files[0]}` around line {line} is where the behaviour "
                "changes; reading context."
            ),
        )
        if fails:
            c.call(
                "bash",
                {
                    "command": (
                        f"gh run view {run_id} --repo orbitly/orbit-web --log-failed | tail -120"
                    )
                },
                ci_log(rng, "test" if "FAIL" in fails[0] else "lint", fails),
                thinking=f"CI is red on `{head[:7]}`. Pulling the failed job log.",
            )
        problem = rng.choice(
            [
                (
                    "the rounding helper is called before the discount is applied, so VAT is "
                    "computed on the gross amount"
                ),
                "`retryWithBackoff` retries POST requests even without an `Idempotency-Key` header",
                (
                    "the effect depends on `sess` but the dependency array is empty, so the "
                    "refresh never re-runs"
                ),
                (
                    "the signature comparison short-circuits on length before "
                    "`timingSafeEqual`, leaking timing"
                ),
                "the batch cap is checked after `splice`, so a batch can hold 501 jobs",
                "the tax id regex accepts lowercase country prefixes that VIES rejects",
            ]
        )
        body = f"{problem[0].upper() + problem[1:]}. See {files[0]}:{line}." + (
            f" CI: `{fails[0].strip()[:90]}`." if fails else ""
        )
        calls = [
            (
                "post_review_comment",
                {"pr": num, "path": files[0], "line": line, "body": body},
                json.dumps(
                    {
                        "id": rng.randint(10**9, 2 * 10**9),
                        "html_url": (
                            f"https://github.com/orbitly/orbit-web/pull/{num}#discussion_r"
                            f"{rng.randint(10**9, 2 * 10**9)}"
                        ),
                    }
                ),
            )
        ]
        if len(files) > 1 and rng.random() < 0.7:
            l2 = rng.randint(10, 200)
            calls.append(
                (
                    "post_review_comment",
                    {
                        "pr": num,
                        "path": files[1],
                        "line": l2,
                        "body": (
                            f"This also needs a test; {files[1]}:{l2} changes behaviour for "
                            f"`{rng.choice(FN)}`."
                        ),
                    },
                    json.dumps({"id": rng.randint(10**9, 2 * 10**9)}),
                )
            )
        billing_no_test = any(f.startswith("src/billing/") for f in files) and not any(
            "__tests__" in f for f in files
        )
        event = "REQUEST_CHANGES" if fails or billing_no_test else "APPROVE"
        calls.append(
            (
                "submit_review",
                {
                    "pr": num,
                    "event": event,
                    "body": (
                        f"{'CI failing: ' + fails[0].strip()[:80] if fails else 'CI green.'} "
                        f"{BILLING_NOTE if billing_no_test else ''}"
                    ).strip(),
                },
                json.dumps({"state": event, "submitted_at": "2026-02-03T15:02:11Z"}),
            )
        )
        c.calls(
            calls,
            thinking=(
                f"Issue: {problem}. "
                f"{'Billing files without tests, so no approval.' if billing_no_test else ''} "
                f"Event `{event}`."
            ),
        )
        c.say(
            (
                f"#{num} ({title}) at `{head[:12]}`: {event.replace('_', ' ').lower()}. Main "
                f"issue at {files[0]}:{line}: {problem}."
            )
            + (f" CI failure: `{fails[0].strip()[:100]}`." if fails else " CI is green.")
            + (
                (
                    " It touches `src/billing/` with no test change, so per your rule I did "
                    "not approve."
                )
                if billing_no_test
                else ""
            )
        )
        if k == 2:
            c.user(
                "For #4131 I talked to aolsen: they'll fix the TS errors. Re-check it "
                "now, they pushed."
            )
            new = sha(rng)
            c.call(
                "bash",
                {"command": "gh pr checks 4131 --repo orbitly/orbit-web --watch --interval 30"},
                "\n".join(
                    (
                        f"{j}\tpass\t{rng.randint(1, 5)}m{rng.randint(0, 59)}s\thttps://"
                        "github.com/orbitly/orbit-web/actions/runs/"
                        f"{rng.randint(12 * 10**9, 13 * 10**9)}"
                    )
                    for j in ["lint", "typecheck", "test", "build"]
                ),
                thinking=f"New head `{new[:12]}` for #4131.",
            )
            c.call(
                "bash",
                {
                    "command": (
                        "git fetch origin pull/4131/head:pr-4131 && git diff "
                        "origin/main...pr-4131 -- src/api/retry.ts | head -80"
                    )
                },
                diff(rng, ["src/api/retry.ts"]),
            )
            c.say(
                f"#4131 is green now at `{new[:12]}`; the `TS2345` at src/api/retry.ts:42 "
                "is fixed with a default `maxRetries = 3`. My earlier comment about "
                "retrying POST without an `Idempotency-Key` still stands."
            )

    c.user(
        "Summarize: per PR, the verdict, the SHA you reviewed, and the top issue with its "
        "file:line. Keep it short."
    )

    c.say(
        "\n".join(f"- #{n}: see above" for n, *_ in PRS),
        thinking=(
            "Compiling the verdicts from the reviews above; `submit_review` events were "
            "recorded per PR."
        ),
    )

    return c.write_abridged(out_dir, "s6_code_review_thinking")
