"""Every code block of README.md and docs/*.md runs as written, against the installed wheel,
or says in its fence why it does not (`tests/support/docs.py` has the rule)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.docs import (
    Block,
    blocks,
    page_id,
    pages,
    python_job,
    reader_env,
    run_python,
    transcript_lines,
)
from tests.support.fake_anthropic import FakeAnthropic

# README's Python blocks run in tests/e2e/test_readme.py, with replies that take the error
# and tool-call paths they handle.
README = "README.md"
PYTHON_PAGES = [
    p for p in pages() if page_id(p) != README and any(b.info == "python" for b in blocks(p))
]
SHELL_BLOCKS = [b for p in pages() for b in blocks(p) if b.info == "sh"]


@pytest.mark.parametrize("page", pages(), ids=page_id)
def test_every_block_runs_or_says_why_not(page: Path) -> None:
    problems = [p for b in blocks(page) if (p := b.policy_problem())]
    assert not problems, "\n".join(problems)


# Session scope: made once per xdist worker, however the worker interleaves modules.
@pytest.fixture(scope="session")
def python_results(
    installed: Path, fake_anthropic_server: FakeAnthropic, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    fake_anthropic_server.reset()
    jobs = []
    for page in PYTHON_PAGES:
        cwd = tmp_path_factory.mktemp(page.stem)
        jobs.append(python_job(page_id(page), blocks(page), cwd))
    results = run_python(jobs, installed, fake_anthropic_server, tmp_path_factory.mktemp("run"))
    results["violations"] = [str(v) for v in fake_anthropic_server.violations]
    return results


# One group: the pages' blocks run in one job, made once by the worker that runs them.
@pytest.mark.xdist_group("docs-python")
@pytest.mark.parametrize("page", PYTHON_PAGES, ids=page_id)
def test_the_python_blocks_of_each_page_run_in_order(
    page: Path, python_results: dict[str, Any]
) -> None:
    result = python_results[page_id(page)]
    assert result["ok"], result["error"]
    assert python_results["violations"] == []


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=lambda b: b.label)
def test_the_shell_blocks_run_as_written(
    block: Block, installed: Path, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    (tmp_path / "session.jsonl").write_text("\n".join(transcript_lines()) + "\n")
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.code],
        cwd=tmp_path,
        env=reader_env(installed, fake_anthropic),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{block.label}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr
