"""The code blocks of README.md and docs/*.md, and how they are run as a reader runs them.

A fenced block's info string says what it is:

- `python`: run. A page's Python blocks run in order in one namespace, in a fresh working
  directory, with top-level `await` allowed (as in `python -m asyncio`). The one name a page
  may use without defining it is `anthropic_client`, an `anthropic.Anthropic()` the page
  says the reader provides (the tests point it at the local fake Messages API).
- `sh`: run with bash (`-e -o pipefail`), with the installed `abridged` first on `PATH`, in
  the page's working directory, where `session.jsonl` is a short recorded transcript.
- anything else: `LANG KIND: REASON`, KIND one of `output` (what a command prints),
  `illustration` (a shape, a synopsis or a fragment, not a program) or `not-run` (a real
  command the suite cannot run), and a reason a reader can check.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import attrs

from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = ("python", "sh")
NOT_RUN_KINDS = ("output", "illustration", "not-run")
_NOT_RUN = re.compile(rf"^\S+ ({'|'.join(NOT_RUN_KINDS)}): \S.*$")
# Fences may be indented (inside a list item); the closing fence has the opening's indent
# and backticks (a block that shows a fence is fenced with more).
_FENCE = re.compile(
    r"^(?P<indent> *)(?P<ticks>`{3,})(?P<info>[^\n`]*)\n(?P<code>.*?)^(?P=indent)(?P=ticks)[ ]*$",
    re.M | re.S,
)


def pages() -> list[Path]:
    """README.md and every page under docs/, so a new page is checked without listing it."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


@attrs.frozen
class Block:
    page: str
    line: int
    info: str
    code: str

    @property
    def language(self) -> str:
        return self.info.split(" ", 1)[0]

    @property
    def label(self) -> str:
        return f"{self.page}:{self.line}"

    def policy_problem(self) -> str | None:
        """Why this block's info string breaks the rule above, or `None`."""
        if self.info in RUNNABLE or _NOT_RUN.match(self.info):
            return None
        return (
            f"{self.label}: a block is `python` or `sh` (run by the tests) or says why not: "
            f"'```LANG KIND: REASON' with KIND one of {', '.join(NOT_RUN_KINDS)}; "
            f"got {self.info!r}"
        )


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        indent = len(match["indent"])
        code = "\n".join(line[indent:] for line in match["code"].splitlines()) + "\n"
        found.append(
            Block(
                page=page_id(page),
                line=text.count("\n", 0, match.start()) + 1,
                info=match["info"].strip(),
                code=code,
            )
        )
    return found


# Runs inside the installed wheel's interpreter: a JSON list of pages in, a JSON map of
# results out. One interpreter for every page, since importing abridged's dependencies costs
# more than most pages' code.
RUNNER = r"""
import ast, asyncio, contextlib, inspect, io, json, os, sys, traceback

import anthropic

pages = json.loads(open(sys.argv[1], encoding="utf-8").read())
results = {}
for page in pages:
    os.chdir(page["cwd"])
    namespace = {"__name__": "__main__", "anthropic_client": anthropic.Anthropic()}
    printed = io.StringIO()
    result = {"ok": True, "stdout": "", "error": ""}
    try:
        with contextlib.redirect_stdout(printed):
            for block in page["blocks"]:
                code = compile(
                    block["code"], block["label"], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
                )
                returned = eval(code, namespace)
                if inspect.iscoroutine(returned):
                    asyncio.run(returned)
    except BaseException:
        result["ok"] = False
        result["error"] = traceback.format_exc()
    result["stdout"] = printed.getvalue()
    result["session_id"] = str(namespace.get("session_id", ""))
    results[page["name"]] = result
open(sys.argv[2], "w", encoding="utf-8").write(json.dumps(results))
"""


def python_job(page: str, page_blocks: list[Block], cwd: Path) -> dict[str, object]:
    return {
        "name": page,
        "cwd": str(cwd),
        "blocks": [
            {"label": b.label, "code": b.code} for b in page_blocks if b.language == "python"
        ],
    }


def transcript_lines() -> list[str]:
    """A short recorded session (a tool call and its result included), as `replay` reads it."""
    messages = [
        {"role": "user", "content": "The CSV export drops the last row. Fix it."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading the export module."},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "bash",
                    "input": {"command": "cat reports/export.py"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01",
                    "content": "def export(rows):\n    return rows[:-1]\n" * 40,
                }
            ],
        },
        {"role": "assistant", "content": "The slice drops the last row; `rows[:]` keeps it."},
        {"role": "user", "content": "Run the tests."},
        {"role": "assistant", "content": "All 12 tests pass."},
    ]
    return [json.dumps(m) for m in messages]


def reader_env(installed: Path, fake: FakeAnthropic) -> dict[str, str]:
    """The environment of a reader who installed abridged and points the SDK at the fake."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ABRIDGED_DB")}
    env["PATH"] = f"{installed}{os.pathsep}{env.get('PATH', '')}"
    env["ANTHROPIC_BASE_URL"] = fake.base_url
    env["ANTHROPIC_API_KEY"] = TEST_API_KEY
    return env


FILES = ("runner.py", "pages.json", "results.json")


def run_python(
    jobs: list[dict[str, object]], installed: Path, fake: FakeAnthropic, work: Path
) -> dict[str, Any]:
    """Runs each page's Python blocks in the installed interpreter; the results by page."""
    (work / "pages.json").write_text(json.dumps(jobs), encoding="utf-8")
    (work / "runner.py").write_text(RUNNER, encoding="utf-8")
    done = subprocess.run(
        [str(installed / "python"), *(str(work / name) for name in FILES)],
        cwd=work,
        env=reader_env(installed, fake),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results: dict[str, Any] = json.loads((work / "results.json").read_text(encoding="utf-8"))
    return results
