"""Claude Code sessions on source repositories: a maintainer's GitHub triage day
(gh-triage-804) and a security audit fanning out parallel searches (audit-fanout-812)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from tests.support.fourteen_sessions.common import (
    ENGLISH,
    CCLog,
    IdGen,
    out_path,
    png,
    prose,
    signature,
    text,
    thinking,
    tool_result,
    tool_use,
)

OWNER, REPO = "fastgrid", "fastgrid"
FILES = [
    "src/grid/virtualizer.ts",
    "src/grid/selection.ts",
    "src/export/csv.ts",
    "src/export/xlsx.ts",
    "src/themes/dark.css",
    "packages/react/src/useGrid.ts",
    "packages/vue/src/GridView.vue",
    "scripts/release.mjs",
    "test/e2e/scroll.spec.ts",
    "docs/guide/sorting.md",
]
DEPS = [
    ("lodash", "4.17.21"),
    ("date-fns", "3.6.0"),
    ("exceljs", "4.4.0"),
    ("vite", "5.4.10"),
    ("typescript", "5.6.3"),
    ("playwright", "1.48.2"),
    ("papaparse", "5.4.1"),
    ("zod", "3.23.8"),
]
TRIAGE_FIRST = (
    "Triage day. Work through the open bugs labelled `needs-repro`. Rules: never push to main "
    "directly, "
    "always open a PR from a fix/ branch, and don't close an issue without a comment saying "
    "which release fixes it."
)
TODOS_UPDATED = (
    "Todos have been modified successfully. Ensure that you continue to use the todo list to "
    "track your progress."
)


def _stem(path: str) -> str:
    return path.rsplit("/", maxsplit=1)[-1].split(".", maxsplit=1)[0]


def gh_triage(out_dir: Path) -> list[Path]:
    """gh-triage-804 (Claude Code log): a maintainer's triage day through the GitHub MCP server.

    Each turn: signed thinking, a TodoWrite of the day's list, `mcp__github__get_issue`, a
    multi-line `Bash` (`cd` + `git log`/`npm ls`/`pytest`) whose later lines name the files,
    sometimes a failing run (`is_error`), then `mcp__github__add_issue_comment` or
    `mcp__github__create_pull_request` with a short one-line `body` naming the file and
    release, and a reply in prose naming pins the npm way (`lodash@4.17.21`), tags
    (`refs/tags/v5.2.1`) and commits (`commit/1a2b3c4d5e`).
    """
    rnd = random.Random(804)
    ids = IdGen(rnd)
    log = CCLog(cwd="/home/mira/src/fastgrid", session="7d2e9a10-55c1-4b8e-9f31-0c6a4b2d8e77")
    log.user(TRIAGE_FIRST)

    issues = rnd.sample(range(2100, 2140), 18)
    for k, num in enumerate(issues):
        if k:
            log.user(
                rnd.choice(
                    [
                        f"Next one: #{num}.",
                        f"Take #{num}, users keep pinging about it.",
                        f"Look at #{num} please.",
                        f"Can you check whether #{num} is a dup?",
                    ]
                )
            )
        f1, f2 = rnd.sample(FILES, 2)
        dep, ver = rnd.choice(DEPS)
        t1, t2, t3 = ids(), ids(), ids()
        th = (
            f"Issue #{num} mentions `{f1}`; I should check whether `{dep}` {ver} changed "
            "behaviour. " + prose(rnd, ENGLISH, rnd.randint(4, 10))
        )
        todos = [
            {
                "content": f"Triage #{n}",
                "status": "completed"
                if n in issues[:k]
                else ("in_progress" if n == num else "pending"),
                "activeForm": f"Triaging #{n}",
            }
            for n in issues
        ]
        log.assistant(
            [
                thinking(th, signature(rnd)),
                text(f"Picking up #{num}."),
                tool_use(t1, "TodoWrite", todos=todos),
                tool_use(t2, "mcp__github__get_issue", owner=OWNER, repo=REPO, issue_number=num),
            ],
            stop="tool_use",
        )
        body = (
            f"### Describe the bug\n{prose(rnd, ENGLISH, rnd.randint(3, 8))}\n\n"
            "### Reproduction\n```ts\n"
            + "\n".join(
                f"grid.{rnd.choice(['scrollTo', 'select', 'export', 'sort'])}"
                f"({rnd.randint(0, 9999)});"
                for _ in range(rnd.randint(3, 12))
            )
            + f"\n```\n\n### Environment\n- fastgrid {rnd.choice(['5.1.0', '5.1.2', '5.2.0'])}"
            f"\n- {dep} {ver}\n- Chrome {rnd.randint(120, 131)}\n"
        )
        title = prose(rnd, ENGLISH, 1)[:60]
        issue = (
            f'{{"number": {num}, "title": "{title}", "state": "open", '
            f'"labels": ["bug", "needs-repro"], "body": {json.dumps(body)}, '
            f'"comments": {rnd.randint(0, 30)}}}'
        )
        log.results([tool_result(t1, TODOS_UPDATED), tool_result(t2, issue)])
        cmd = rnd.choice(
            [
                f"cd /home/mira/src/fastgrid && \\\n  npm ls {dep} && \\\n"
                f"  git log --oneline -n 20 -- {f1} {f2}",
                f"cd /home/mira/src/fastgrid\nnpx vitest run test/unit/{_stem(f1)}.test.ts "
                "--reporter=verbose",
                "cd /home/mira/src/fastgrid && git fetch origin\n"
                f"git diff origin/main...origin/release/5.2 -- {f1}",
            ]
        )
        failed = rnd.random() < 0.35
        out = "\n".join(
            f"{rnd.getrandbits(28):07x} {prose(rnd, ENGLISH, 1)[:70]}"
            for _ in range(rnd.randint(10, 40))
        )
        if failed:
            out = (
                f" FAIL  test/unit/{_stem(f1)}.test.ts > {prose(rnd, ENGLISH, 1)[:50]}\n"
                f"AssertionError: expected {rnd.randint(0, 500)} to be {rnd.randint(0, 500)}\n"
                f"    at {f1}:{rnd.randint(10, 400)}:{rnd.randint(1, 40)}\n" + out
            )
        bash = tool_use(t3, "Bash", command=cmd, description="Reproduce")
        log.assistant([text("Reproducing locally."), bash], stop="tool_use")
        log.results([tool_result(t3, out, is_error=failed)])
        t4 = ids()
        if rnd.random() < 0.5:
            comment = tool_use(
                t4,
                "mcp__github__add_issue_comment",
                owner=OWNER,
                repo=REPO,
                issue_number=num,
                body=f"Reproduced; the cause is in {f1}, fixed on fix/{num}-{_stem(f1)} "
                f"for v5.2.{rnd.randint(1, 9)}.",
            )
            log.assistant([comment], stop="tool_use")
            posted = (
                f'{{"id": {rnd.randint(10**9, 2 * 10**9)}, "html_url": '
                f'"https://github.com/fastgrid/fastgrid/issues/{num}'
                f'#issuecomment-{rnd.randint(10**9, 2 * 10**9)}"}}'
            )
            log.results([tool_result(t4, posted)])
        else:
            pull = tool_use(
                t4,
                "mcp__github__create_pull_request",
                owner=OWNER,
                repo=REPO,
                title=f"fix(grid): {prose(rnd, ENGLISH, 1)[:50].rstrip('.')} (#{num})",
                head=f"fix/{num}-{_stem(f2)}",
                base="main",
                body=f"Fixes #{num}. Touches {f2} and {f1}; pins {dep}@{ver}.",
            )
            log.assistant([pull], stop="tool_use")
            opened = (
                f'{{"number": {num + 300}, "html_url": '
                f'"https://github.com/fastgrid/fastgrid/pull/{num + 300}"}}'
            )
            log.results([tool_result(t4, opened)])
        sha = f"{rnd.getrandbits(40):010x}"
        reply = (
            f"#{num}: reproduced with {dep}@{ver} on Node "
            f"{rnd.choice(['18.20.4', '20.17.0', '22.9.0'])}/{rnd.choice(['20.18.0', '22.11.0'])}. "
            f"The regression came in with commit/{sha} and is not in "
            f"refs/tags/v5.1.{rnd.randint(0, 4)}; "
            f"see github.com/fastgrid/fastgrid/blob/main/{f1} around line {rnd.randint(10, 400)}. "
            + prose(rnd, ENGLISH, rnd.randint(1, 3))
        )
        log.assistant([text(reply)], stop="end_turn")

    log.user(
        "Summarise the day: which issues got PRs, which got comments, and confirm you followed "
        "my rules."
    )
    done = (
        "Done. I opened PRs from fix/ branches only and commented on each issue with the "
        "release that fixes it."
    )
    log.assistant([text(done)], stop="end_turn")
    return log.write(out_path(out_dir, "gh-triage-804.log.jsonl"))


DIRS = [
    "services/api",
    "services/billing",
    "services/auth",
    "web/admin",
    "web/storefront",
    "libs/crypto",
    "libs/http",
    "infra/helm",
]
PATTERNS = [
    "eval\\(",
    "exec\\(",
    "pickle\\.loads",
    "yaml\\.load\\(",
    "verify=False",
    "md5\\(",
    "subprocess\\..*shell=True",
    "jwt\\.decode\\(.*verify",
    "innerHTML\\s*=",
    "dangerouslySetInnerHTML",
    "SELECT .* \\+ ",
    "random\\.random\\(",
    "CORS_ALLOW_ALL",
    "DEBUG\\s*=\\s*True",
    "http://",
]
CVES = [
    "CVE-2024-3651",
    "CVE-2024-35195",
    "CVE-2023-45803",
    "CVE-2024-6345",
    "CVE-2024-34069",
    "CVE-2024-22195",
    "CVE-2023-50447",
    "CVE-2024-1135",
]
AUDIT_FIRST = (
    "Security audit of the monorepo before the SOC 2 window. Scope: only services/ and web/, "
    "never modify files, "
    "and always cite file:line for each finding. Start with injection and deserialization "
    "issues."
)
AUDIT_ASKS = [
    "Continue with the next category.",
    "Look at crypto and randomness now.",
    "Check the frontend for XSS sinks.",
    "Cross-check the dependency advisories.",
    "Anything in the admin UI worth a screenshot?",
    "Go deeper on billing.",
]
MANIFESTS = [
    "requirements.txt",
    "requirements-dev.txt",
    "package.json",
    "Dockerfile",
    "poetry.lock",
    "yarn.lock",
]


def _fanout_call(
    rnd: random.Random, tid: str, step: int, shot: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One parallel call of the audit and its result."""
    kind = rnd.random()
    d = rnd.choice(DIRS)
    if kind < 0.45:
        pat = rnd.choice(PATTERNS)
        call = tool_use(
            tid,
            "Grep",
            pattern=pat,
            path=f"/work/monorepo/{d}",
            glob=rnd.choice(["*.py", "*.ts", "*.tsx", "*.{js,jsx}"]),
            output_mode="content",
            **{"-n": True},
        )
        if rnd.random() < 0.1:
            missing = f"<tool_use_error>Path does not exist: /work/monorepo/{d}</tool_use_error>"
            return call, tool_result(tid, missing, is_error=True)
        hits = "\n".join(
            f"/work/monorepo/{d}/"
            f"{rnd.choice(['views', 'models', 'utils', 'handlers', 'components'])}/"
            f"{rnd.choice(['user', 'order', 'invoice', 'session', 'admin'])}_"
            f"{rnd.randint(1, 30)}.py:{rnd.randint(1, 900)}:    {prose(rnd, ENGLISH, 1)[:80]}"
            for _ in range(rnd.randint(0, 40))
        )
        return call, tool_result(tid, hits or "No matches found")
    if kind < 0.6:
        glob = rnd.choice(["requirements*.txt", "package.json", "Dockerfile", "*.lock"])
        call = tool_use(tid, "Glob", pattern=f"{d}/**/{glob}")
        found = "\n".join(f"/work/monorepo/{d}/{x}" for x in rnd.sample(MANIFESTS, 3))
        return call, tool_result(tid, found)
    if kind < 0.8:
        name = rnd.choice(["settings", "auth", "serializers", "routes", "index"])
        fp = f"/work/monorepo/{d}/{name}.py"
        call = tool_use(
            tid, "Read", file_path=fp, offset=rnd.randint(1, 400), limit=rnd.choice([80, 120, 200])
        )
        lines = "\n".join(
            f"{i:>6}\t{prose(rnd, ENGLISH, 1)[:90]}" for i in range(rnd.randint(60, 200))
        )
        return call, tool_result(tid, lines)
    if kind < 0.93:
        cve = rnd.choice(CVES)
        call = tool_use(
            tid,
            "WebFetch",
            url=f"https://nvd.nist.gov/vuln/detail/{cve}",
            prompt=f"Which versions are affected by {cve} and what is the fix?",
        )
        if rnd.random() < 0.2:
            timeout = "Request failed: timeout of 30000ms exceeded"
            return call, tool_result(tid, timeout, is_error=True)
        advisory = (
            f"{cve}: affects versions before "
            f"{rnd.randint(1, 9)}.{rnd.randint(0, 40)}.{rnd.randint(0, 9)}; "
            f"fixed in {rnd.randint(1, 9)}.{rnd.randint(0, 40)}.{rnd.randint(0, 9)}. "
            + prose(rnd, ENGLISH, rnd.randint(3, 12))
        )
        return call, tool_result(tid, advisory)
    call = tool_use(tid, "mcp__playwright__browser_take_screenshot", filename=f"admin-{step}.png")
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": shot}}
    taken = [{"type": "text", "text": f"Took the screenshot admin-{step}.png"}, image]
    return call, tool_result(tid, taken)


def audit_fanout(out_dir: Path) -> list[Path]:
    """audit-fanout-812 (Claude Code log): a security audit of a monorepo where every reply
    fans out 8-16 parallel calls (`Grep` with patterns and globs, `Glob`, `Read`, `WebFetch`
    of advisories with a prompt), their results written one entry each, out of order; some
    fail (`is_error`: a path that does not exist, a fetch that times out), some are
    screenshots of the admin UI (image results). The auditor's scope rules are stated in the
    first prompt; findings name CVEs, versions, files and lines.
    """
    rnd = random.Random(812)
    ids = IdGen(rnd)
    log = CCLog(cwd="/work/monorepo", session="a1b2c3d4-0000-4bbb-8ccc-ddddeeeeffff")
    shot = png(1440, 900, 245)

    log.user(AUDIT_FIRST)
    for step in range(14):
        if step:
            log.user(rnd.choice(AUDIT_ASKS))
        calls: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for _ in range(rnd.randint(8, 16)):
            call, result = _fanout_call(rnd, ids(), step, shot)
            calls.append(call)
            results.append(result)
        log.assistant(
            [text(f"Running {len(calls)} searches in parallel."), *calls], stop="tool_use"
        )
        order = list(range(len(results)))
        rnd.shuffle(order)
        log.results([results[i] for i in order])
        finds = []
        for _ in range(rnd.randint(3, 7)):
            d = rnd.choice(DIRS[:5])
            finds.append(
                f"- {rnd.choice(['High', 'Medium', 'Low'])}: "
                f"`{rnd.choice(PATTERNS).replace(chr(92), '')}` in "
                f"{d}/{rnd.choice(['views', 'handlers'])}/"
                f"{rnd.choice(['user', 'order', 'invoice'])}_{rnd.randint(1, 30)}.py:"
                f"{rnd.randint(1, 900)}; "
                f"{rnd.choice(CVES)} applies to urllib3 "
                f"{rnd.randint(1, 2)}.{rnd.randint(0, 2)}.{rnd.randint(0, 9)}, "
                f"upgrade to 2.2.{rnd.randint(2, 3)}."
            )
        findings = "Findings so far:\n" + "\n".join(finds) + "\n\n" + prose(rnd, ENGLISH, 2)
        log.assistant([text(findings)], stop="end_turn")

    log.user("Write the executive summary. Restate the scope rules I set.")
    scope = (
        "Scope: only services/ and web/, no file modifications, every finding cited as file:line."
    )
    log.assistant([text(scope)], stop="end_turn")
    return log.write(out_path(out_dir, "audit-fanout-812.log.jsonl"))
