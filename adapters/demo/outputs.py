"""What the agent's commands print: pytest runs, git history and blame, a profile, a CI log."""

from __future__ import annotations

import html
import random
import re
from collections.abc import Callable, Sequence

import attrs

from abridged.adapters.demo.repository import REPO_ROOT, Repo


@attrs.frozen
class FailingTest:
    """A failing test: its id, the traceback frames below the test, and the error line."""

    test_id: str
    error: str
    frames: tuple[tuple[str, int, str, str], ...] = ()
    source: str = ""


def pytest_log(
    rng: random.Random,
    ids: Sequence[str],
    failures: Sequence[FailingTest],
    *,
    verbose: bool,
    seconds: float,
    line_of: Callable[[str, str], int],
) -> str:
    failed = {f.test_id for f in failures}
    skipped = {t for t in ids if t not in failed and rng.random() < 0.012}
    lines = [
        "=" * 29 + " test session starts " + "=" * 30,
        "platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0"
        + (f" -- {REPO_ROOT}/.venv/bin/python" if verbose else ""),
        f"rootdir: {REPO_ROOT}",
        "configfile: pyproject.toml",
        "plugins: cov-6.0.0, xdist-3.6.1",
        ("collecting ... " if verbose else "")
        + f"collected {len(ids)} item{'' if len(ids) == 1 else 's'}",
        "",
    ]
    if verbose:
        for index, test_id in enumerate(ids, 1):
            outcome = (
                "FAILED" if test_id in failed else "SKIPPED" if test_id in skipped else "PASSED"
            )
            percent = f"[{index * 100 // len(ids):>3}%]"
            lines.append(f"{test_id} {outcome}".ljust(72) + percent)
    else:
        marks = "".join(
            "F" if test_id in failed else "s" if test_id in skipped else "." for test_id in ids
        )
        for start in range(0, len(marks), 72):
            chunk = marks[start : start + 72]
            lines.append(chunk.ljust(72) + f" [{(start + len(chunk)) * 100 // len(marks):>3}%]")
    if failures:
        lines += ["", "=" * 35 + " FAILURES " + "=" * 35]
        for failure in failures:
            test_name = failure.test_id.split("::")[-1]
            lines.append(f" {test_name} ".center(80, "_"))
            source = failure.source.splitlines()
            lines += ["", *(f"    {line}" for line in source[:-1]), f">   {source[-1]}"]
            path = failure.test_id.split("::")[0]
            where = line_of(path, f"def {test_name}(") + failure.source.count("\n")
            if failure.frames:
                lines += ["", f"{path}:{where}: ", "_ " * 40]
                for frame_path, line, function, code in failure.frames:
                    lines += [f"{frame_path}:{line}: in {function}", f"    {code}"]
                lines += [f"E   {line}" for line in failure.error.splitlines()]
            else:
                lines += [f"E       {line}" for line in failure.error.splitlines()]
                lines += ["", f"{path}:{where}: " + failure.error.split(":")[0]]
    passed = len(ids) - len(failed) - len(skipped)
    if failures or skipped:
        lines += ["", "=" * 28 + " short test summary info " + "=" * 27]
        lines += [
            f"SKIPPED [1] {t.split('::')[0]}: needs the optional 'watchdog' extra"
            for t in sorted(skipped)
        ]
        for failure in failures:
            error = failure.error.splitlines()[0]
            error = error if len(error) <= 70 else error[:67] + "..."
            lines.append(f"FAILED {failure.test_id} - {error}")
    summary = ", ".join(
        part
        for part in (
            f"{len(failed)} failed" if failed else "",
            f"{passed} passed" if passed else "",
            f"{len(skipped)} skipped" if skipped else "",
        )
        if part
    )
    lines.append(f" {summary} in {seconds:.2f}s ".center(80, "="))
    return "\n".join(lines)


COMMIT_SUBJECTS = (
    "Fix lazy continuation in nested block quotes (#402)",
    "Speed up entity decoding with a lookup table",
    "docs: explain the [[toc]] marker",
    "Bump click to 8.1.7",
    "Tables: parse header row separately",
    "Footnotes: keep definition order stable",
    "ci: add Python 3.12 to the matrix",
    "Refactor container closing into blocks.close_unmatched",
    "Fix off-by-one in code span backtick runs (#388)",
    "Add --stdout option to `quillmark build`",
    "Release 2.3.1",
    "lexer: classify tabs per spec 2.2",
)


def git_log(rng: random.Random) -> str:
    return "\n".join(
        f"commit {''.join(rng.choices('0123456789abcdef', k=40))}\n"
        f"Author: {rng.choice(_AUTHORS)}\nDate:   {rng.choice(_DATES)}\n\n"
        f"    {rng.choice(COMMIT_SUBJECTS)}\n"
        for _ in range(rng.randint(2, 5))
    )


def git_blame(rng: random.Random, repo: Repo, path: str, first: int) -> str:
    lines = repo.files[path].splitlines()[first - 1 : first + 29]
    authors = [a.split(" <")[0] for a in _AUTHORS]
    commits = ["".join(rng.choices("0123456789abcdef", k=8)) for _ in range(3)]
    out = []
    for number, line in enumerate(lines[: rng.randint(12, 30)], first):
        who = rng.randrange(3)
        date = (
            "2024-11-02 14:20:51 +0100",
            "2025-01-28 09:15:31 +0000",
            "2025-02-24 10:41:07 +0100",
        )
        out.append(f"{commits[who]} ({authors[who]:<16} {date[who]} {number:>4}) {line}")
    return "\n".join(out)


def html_for(sample: str) -> str:
    text = sample.replace("\\n", "\n")
    first = text.splitlines()[0]
    if first.startswith("#"):
        return f'<h1 id="title">{first.lstrip("# ")}</h1>'
    if first.startswith("- "):
        return "<ul>\n<li>one</li>\n<li>two</li>\n</ul>"
    if first.startswith(">"):
        return "<blockquote>\n<p>quote\nmore</p>\n</blockquote>"
    if first.startswith("```"):
        return '<pre><code class="language-py">x = 1\n</code></pre>'
    if first.startswith("|"):
        return (
            "<table>\n<thead>\n<tr>\n<th>a</th>\n<th>b</th>\n</tr>\n</thead>\n"
            "<tbody>\n<tr>\n<td>1</td>\n<td>2</td>\n</tr>\n</tbody>\n</table>"
        )
    if first.startswith("Über"):
        return '<h1 id="ber">Über uns</h1>'
    return f"<p>{html.escape(first)}</p>"


_AUTHORS = (
    "Mara Lindqvist <mara@quillmark.dev>",
    "Tomás Ferreira <tomas.ferreira@example.org>",
    "Yuki Tanaka <yuki@quillmark.dev>",
    "Dev Patel <dev@example.com>",
)
_DATES = (
    "Mon Feb 24 10:41:07 2025 +0100",
    "Thu Feb 13 18:02:55 2025 +0900",
    "Tue Jan 28 09:15:31 2025 +0000",
    "Fri Dec 20 16:47:12 2024 -0500",
)


def profile_report(rng: random.Random, repo: Repo) -> str:
    rows = [
        ("1", "9.402", "9.402", "{built-in method builtins.exec}"),
        ("1", "0.000", "9.398", "cli.py:1(<module>)"),
        ("1", "0.002", "9.391", "cli.py:88(build)"),
        ("41873", "0.211", "9.102", "inline.py:140(parse_inline)"),
        ("39920", "0.094", "8.871", "inline.py:212(scan_emphasis)"),
        ("39920", "8.744", "8.744", "{method 'match' of 're.Pattern' objects}"),
    ]
    functions = [
        (path.split("/")[-1], name)
        for path, text in repo.files.items()
        if path.startswith("quillmark/")
        for name in re.findall(r"^def (\w+)", text, re.MULTILINE)
    ]
    for _ in range(rng.randint(260, 330)):
        module, name = rng.choice(functions)
        count = rng.randint(1, 90000)
        total = rng.uniform(0, 0.05)
        rows.append(
            (
                str(count),
                f"{total * 0.6:.3f}",
                f"{total:.3f}",
                f"{module}:{rng.randint(1, 600)}({name})",
            )
        )
    lines = [
        "wrote /tmp/cl.html",
        f"         {rng.randint(4_000_000, 6_000_000)} function calls "
        f"({rng.randint(3_000_000, 4_000_000)} primitive calls) in 9.409 seconds",
        "",
        "   Ordered by: cumulative time",
        "",
        "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)",
    ]
    for calls, tottime, cumtime, where in rows:
        per = float(cumtime) / max(1, int(calls))
        lines.append(
            f"{calls:>9} {tottime:>8} {float(tottime) / max(1, int(calls)):>8.3f} "
            f"{cumtime:>8} {per:>8.3f} {where}"
        )
    return "\n".join(lines)


def ci_log(rng: random.Random, repo: Repo) -> str:
    stamp = "2025-03-03T17:{:02d}:{:02d}.{:07d}Z"
    lines: list[str] = []
    ids = repo.test_ids()
    for index, test_id in enumerate(ids):
        moment = stamp.format(41 + index // 600, (index // 10) % 60, rng.randrange(10_000_000))
        outcome = "FAILED" if test_id == "tests/test_cli.py::test_output_path" else "PASSED"
        if index % 4 == 0 or outcome == "FAILED":
            lines.append(
                f"test (windows-latest, 3.12)\tRun pytest -ra\t{moment} {test_id} {outcome}"
            )
    lines += [
        "test (windows-latest, 3.12)\tRun pytest -ra\t2025-03-03T17:42:58.1934121Z "
        + "=" * 30
        + " FAILURES "
        + "=" * 30,
        "test (windows-latest, 3.12)\tRun pytest -ra\t2025-03-03T17:42:58.1934872Z "
        "E       AssertionError: assert 'wrote build/index.html' in 'wrote build\\\\index.html\\n'",
        "test (windows-latest, 3.12)\tRun pytest -ra\t2025-03-03T17:42:58.1935510Z "
        "FAILED tests/test_cli.py::test_output_path - AssertionError: assert 'wrote build/in...",
        "test (windows-latest, 3.12)\tRun pytest -ra\t2025-03-03T17:42:58.2011734Z "
        f"=========== 1 failed, {len(ids) - 1} passed in 14.82s ===========",
        "test (windows-latest, 3.12)\tRun pytest -ra\t2025-03-03T17:42:58.2687203Z "
        "##[error]Process completed with exit code 1.",
    ]
    return "\n".join(lines)
