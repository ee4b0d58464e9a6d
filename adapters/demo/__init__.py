"""A generated coding-agent session for `abridged demo`: no shared data, no API key needed.

`demo_transcript` plays a coding agent at work on `quillmark`, an imaginary Markdown library:
several requests, each followed by many tool calls (some in parallel), tool outputs from one
line to tens of kilobytes, failing commands, edits, short reasoning between calls and a closing
answer. The repository it works on is generated too, and edits change it, so a file read after
an edit shows the edit. The same seed always gives the same transcript.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence

from abridged.adapters.demo.agent import Agent
from abridged.adapters.demo.codegen import MARKDOWN_SAMPLES, VERBS
from abridged.adapters.demo.outputs import (
    COMMIT_SUBJECTS,
    FailingTest,
    ci_log,
    git_blame,
    git_log,
    html_for,
    profile_report,
)
from abridged.adapters.demo.repository import DOC_PAGES, REPO_ROOT, Repo
from abridged.adapters.demo.sources import ANCHOR_TESTS, SLUG_ANCHOR, SLUG_FIXED, TOC_ANCHOR
from abridged.adapters.transcripts import Transcript
from abridged.domain.messages import JSON

DEMO_MODEL = "claude-sonnet-4-5"
"""The model the demo session is attributed to."""


SYSTEM_PROMPT = """\
You are Quill, a coding agent working in a checked-out git repository on the user's machine.
You help with software engineering tasks: fixing bugs, adding features, refactoring, running
tests and explaining code.

# Environment
- Working directory: /home/dev/quillmark (a Python 3.12 project managed with pip and a .venv)
- Platform: linux. Shell: bash. Today's date: 2025-03-04.
- The repository is `quillmark`, a CommonMark-compliant Markdown to HTML library with a CLI.

# How to work
- Read before you edit. Never guess file contents: use read_file or search_code first.
- Keep changes minimal and in the style of the surrounding code. Do not reformat unrelated code.
- After each change, run the relevant tests with run_command (`.venv/bin/pytest ...`). Before
  you say a task is done, run the whole suite, `ruff check` and `mypy`.
- When several calls do not depend on each other, make them in the same message.
- If a command fails, read the error and fix the cause; do not retry the same command blindly.
- Never commit unless the user asks. Never push. Never use `git reset --hard` or `--force`.

# Tone
- Be concise. Explain what you changed and why in a few sentences at the end of each task.
- Answer in the language the user writes in.
- Refer to code as `path:line` so the user can jump to it.
"""


def demo_tools() -> tuple[dict[str, JSON], ...]:
    """The four tool definitions of the demo agent, in Anthropic's shape (fresh copies)."""
    return (
        {
            "name": "read_file",
            "description": (
                "Read a text file of the repository. Lines are numbered from 1, as `cat -n` "
                "prints them. For a large file, pass `offset` and `limit` to read a part."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "Path of the file, relative to the repository root.",
                    },
                    "offset": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "First line to read (1-based). Default: 1.",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 2000,
                        "description": "How many lines to read. Default: the whole file.",
                    },
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        },
        {
            "name": "run_command",
            "description": (
                "Run a shell command in the repository and return its combined stdout and "
                "stderr. A non-zero exit status is reported as an error."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The bash command line."},
                    "timeout_seconds": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 600,
                        "default": 120,
                        "description": "Kill the command after this many seconds.",
                    },
                    "cwd": {
                        "type": "string",
                        "description": "Directory to run in, relative to the repository root.",
                    },
                },
                "required": ["command"],
                "additionalProperties": False,
            },
        },
        {
            "name": "search_code",
            "description": (
                "Search the repository's files for a regular expression (ripgrep syntax). "
                "Returns matching lines as `path:line:text`."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The regular expression."},
                    "path": {
                        "type": "string",
                        "description": "File or directory to search. Default: the whole repo.",
                    },
                    "glob": {
                        "type": "string",
                        "description": "Only search files matching this glob, e.g. `*.py`.",
                    },
                    "case_sensitive": {"type": "boolean", "default": True},
                    "max_results": {"type": "integer", "minimum": 1, "default": 200},
                },
                "required": ["pattern"],
                "additionalProperties": False,
            },
        },
        {
            "name": "edit_file",
            "description": (
                "Replace `old_string` by `new_string` in a file. `old_string` must occur "
                "exactly once unless `replace_all` is true. An empty `old_string` creates the "
                "file with `new_string` as its content."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the repo root."},
                    "old_string": {"type": "string", "description": "The exact text to replace."},
                    "new_string": {"type": "string", "description": "The replacement text."},
                    "replace_all": {"type": "boolean", "default": False},
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": False,
            },
        },
    )


def demo_transcript(*, seed: int = 7, turns: int = 6) -> Transcript:
    """A realistic coding-agent session of `turns` requests; the same seed gives the same one.

    At the defaults it has about 300-500 messages and 150k-400k tokens, so replaying it at a
    32k-token window compacts many times.
    """
    if turns < 1:
        raise ValueError(f"turns must be at least 1, got {turns}")
    rng = random.Random(seed)
    repo = Repo(random.Random(f"quillmark-repo:{seed}"))
    agent = Agent(rng, repo)
    done: set[_Scenario] = set()
    for scenario in _plan(rng, turns):
        if scenario in done:
            # Past six requests they repeat, as backports to a fresh maintenance branch, so
            # every edit still applies to the code it was written for.
            repo.files = dict(repo.original)
            done.clear()
            agent.preamble = (
                f"Now the same on the maintenance-2.{rng.randint(0, 2)} branch (checked out). "
            )
        done.add(scenario)
        scenario(agent)
    return Transcript(
        messages=tuple(agent.messages),
        system=SYSTEM_PROMPT,
        tools=demo_tools(),
        model=DEMO_MODEL,
        source=f"<demo seed={seed} turns={turns}>",
    )


# ---------------------------------------------------------------------------------------------
# Common moves


def _orient(agent: Agent, big: bool) -> None:
    rng = agent.rng
    log = "\n".join(
        f"{''.join(rng.choices('0123456789abcdef', k=7))} {rng.choice(COMMIT_SUBJECTS)}"
        for _ in range(rng.randint(12, 30))
    )
    status = (
        "On branch main\nYour branch is up to date with 'origin/main'.\n\n"
        "nothing to commit, working tree clean"
    )
    agent.step(
        agent.maybe("Let me get oriented in the repository first."),
        agent.run("git status", status),
        agent.run("git log --oneline -30", log),
    )
    if big or not agent.listed:
        agent.listed = True
        agent.step(
            agent.maybe("Listing the tracked files to see the layout."),
            agent.run("git ls-files", "\n".join(agent.repo.tracked_files())),
        )


def _wander(agent: Agent, steps: int, around: Sequence[str]) -> None:
    """Exploration between the moves that matter: reads, searches, history, quick checks."""
    rng, repo = agent.rng, agent.repo
    modules = [
        path
        for path, text in repo.files.items()
        if path.startswith("quillmark/") and path.endswith(".py") and text.count("\n") > 20
    ]
    tests = [p for p in repo.files if p.startswith("tests/test_")]
    for _ in range(steps):
        path = rng.choice([*around, *around, *modules])
        names = re.findall(r"^def (\w+)", repo.files.get(path, ""), re.MULTILINE) or ["render"]
        name = rng.choice(names)
        move = rng.randrange(9)
        if move == 0 and path not in agent.seen:
            agent.seen.add(path)
            thought = rng.choice(("Reading `{path}` in full.", "Let me see all of `{path}`."))
            agent.step(agent.maybe(thought.format(path=path)), agent.read(path))
        elif move <= 1:
            start = max(1, repo.line_of(path, f"def {name}") - rng.randint(2, 8))
            thought = rng.choice(
                ("Let me look at `{name}` in `{path}`.", "Reading `{name}` and its surroundings.")
            )
            agent.step(
                agent.maybe(thought.format(name=name, path=path)),
                agent.read(path, start, rng.randint(30, 90)),
            )
        elif move == 2:
            thought = rng.choice(
                (
                    "Who calls `{name}`?",
                    "I'll check the callers of `{name}` too.",
                    "Checking whether anything else depends on `{name}`.",
                )
            )
            agent.step(agent.maybe(thought.format(name=name)), agent.search(rf"\b{name}\b", ".py"))
        elif move == 3:
            other = rng.choice([m for m in modules if m != path])
            agent.seen.update((path, other))
            agent.step(
                agent.maybe(f"Reading `{path}` and `{other}` side by side."),
                agent.read(path),
                agent.read(other, 1, rng.randint(40, 120)),
            )
        elif move == 4:
            verb = rng.choice(VERBS)
            agent.step(
                agent.maybe(f"Are there other `{verb}_*` helpers doing the same thing?"),
                agent.search(rf"def _?{verb}_\w+\(", ".py", 60),
            )
        elif move == 5:
            agent.step(
                agent.maybe(f"When did `{path}` last change?"),
                agent.run(f"git log -5 -- {path}", git_log(rng)),
            )
        elif move == 6:
            first = repo.line_of(path, f"def {name}")
            agent.step(
                agent.maybe(f"Who wrote `{name}`, and when?"),
                agent.run(
                    f"git blame -L {first},+{rng.randint(12, 30)} {path}",
                    git_blame(rng, repo, path, first),
                ),
            )
        elif move == 7:
            test_file = rng.choice(tests)
            agent.step(
                agent.maybe(f"Running `{test_file}` too, to see where it stands."),
                agent.pytest(test_file),
            )
        else:
            sample = rng.choice([s for s in MARKDOWN_SAMPLES if "'" not in s])
            code = f'from quillmark import render; print(render("{sample}"))'
            agent.step(
                agent.maybe("Let me see what the renderer does with a small input."),
                agent.run(f".venv/bin/python -c '{code}'", html_for(sample)),
            )


def _checks(agent: Agent, mypy_error: str | None = None) -> None:
    """Full suite plus linters before declaring a task done."""
    rng = agent.rng
    ruff = agent.run(".venv/bin/ruff check .", "All checks passed!")
    if mypy_error:
        mypy = agent.run(
            ".venv/bin/mypy quillmark",
            f"{mypy_error}\nFound 1 error in 1 file (checked 17 source files)",
            status=1,
        )
    else:
        mypy = agent.run(".venv/bin/mypy quillmark", "Success: no issues found in 17 source files")
    agent.step(agent.maybe("Now the linters, in parallel."), ruff, mypy)
    agent.step(
        agent.maybe("And the whole suite."),
        agent.pytest("tests", verbose=rng.random() < 0.75),
    )


# ---------------------------------------------------------------------------------------------
# The requests


def _unicode_headings(agent: Agent) -> None:
    rng = agent.rng
    agent.ask(
        "test_unicode started failing after the slug refactor: headings with non-ASCII letters "
        'lose characters in their anchor ids (`## Über uns` gets `id="ber-uns"`). Can you fix '
        "it properly? Anchors should keep the heading's letters."
    )
    _orient(agent, big=rng.random() < 0.5)
    failure = FailingTest(
        "tests/test_parser.py::test_unicode",
        "AssertionError: assert '<h2 id=\"ber-uns\">Über uns</h2>\\n' == "
        "'<h2 id=\"über-uns\">Über uns</h2>\\n'",
        source=ANCHOR_TESTS["parser"][0],
    )
    agent.step(
        agent.maybe("First, reproduce the failure."),
        agent.pytest("tests/test_parser.py", [failure], only=(failure.test_id,)),
    )
    agent.step(
        "Confirmed. The anchor comes from the slug helper; let me find it.",
        agent.search(r"def slugify|slugify\(", ".py"),
    )
    agent.step(
        agent.maybe("Reading the slug module and its tests."),
        agent.read("quillmark/slug.py"),
        agent.read("tests/test_slug.py"),
    )
    _wander(agent, rng.randint(12, 18), ("quillmark/slug.py", "quillmark/render.py"))
    agent.step(
        'Found it: `slugify` encodes to ASCII with `errors="ignore"`, which silently drops '
        "`Ü`. I'll match word characters with `\\w` (Unicode-aware) instead.",
        agent.edit("quillmark/slug.py", SLUG_ANCHOR.replace("    ", "  "), SLUG_FIXED),
    )
    agent.step(
        "The indentation in my old_string was wrong. Retrying with the exact text.",
        agent.edit("quillmark/slug.py", SLUG_ANCHOR, SLUG_FIXED),
    )
    agent.step(
        agent.maybe("It needs `unicodedata`."),
        agent.edit("quillmark/slug.py", "import re\n", "import re\nimport unicodedata\n"),
    )
    agent.step(None, agent.pytest("tests/test_parser.py", only=(failure.test_id,)))
    toc_failure = FailingTest(
        "tests/test_toc.py::test_anchor_links",
        "AssertionError: assert 'href=\"#straße\"' in "
        '\'<nav class="toc"><a href="#strasse">Straße</a></nav>\'',
        source=ANCHOR_TESTS["toc"][0],
    )
    agent.step(
        agent.maybe("That passes. Running the neighbouring test files."),
        agent.pytest("tests/test_toc.py", [toc_failure]),
        agent.pytest("tests/test_slug.py"),
    )
    agent.step(
        "`casefold()` turns `ß` into `ss`, which is right for comparing strings but not for an "
        "id the reader sees. `lower()` keeps `ß`.",
        agent.edit(
            "quillmark/slug.py",
            '.normalize("NFC", text).casefold()',
            '.normalize("NFC", text).lower()',
        ),
    )
    agent.step(None, agent.pytest("tests/test_toc.py"))
    _wander(agent, rng.randint(5, 9), ("quillmark/toc.py", "quillmark/slug.py"))
    _checks(agent)
    agent.step(agent.maybe("Final diff:"), agent.run("git diff", agent.diff()))
    agent.done.append(
        ("Unicode anchors", "Heading anchors keep non-ASCII letters (`## Über uns` → `#über-uns`)")
    )
    agent.answer(
        "Fixed. `slugify` (quillmark/slug.py) no longer strips non-ASCII letters:\n\n"
        "- it matches words with `\\w` (Unicode-aware) after NFC normalisation, so "
        '`## Über uns` gets `id="über-uns"`;\n'
        "- it uses `lower()`, not `casefold()`: casefold maps `ß` to `ss`, which broke "
        "`test_toc.py::test_anchor_links`.\n\n"
        "The whole suite passes, and ruff and mypy are clean. Anchors of existing ASCII "
        "headings do not change, so old links keep working."
    )


def _tables(agent: Agent) -> None:
    repo, rng = agent.repo, agent.rng
    path = "quillmark/plugins/tables.py"
    agent.ask(
        "Please finish GitHub-style table alignment in the tables plugin (`:---`, `:---:`, "
        "`---:`). There's a TODO in plugins/tables.py. Also make sure an escaped pipe `\\|` "
        "inside a cell doesn't split it."
    )
    _orient(agent, big=False)
    agent.step(
        agent.maybe("Reading the plugin and its tests."),
        agent.read(path),
        agent.read("tests/test_tables.py"),
    )
    line = repo.line_of(path, "_render_cell")
    failures = [
        FailingTest(
            "tests/test_tables.py::test_alignment",
            "KeyError: 'align'",
            (
                (
                    path,
                    line + 1,
                    "_render_cell",
                    'style = f\' style="text-align: {cell.attrs["align"]}"\'',
                ),
            ),
            ANCHOR_TESTS["tables"][0],
        ),
        FailingTest(
            "tests/test_tables.py::test_escaped_pipe",
            "AssertionError: assert 3 == 2\n"
            " +  where 3 = len([Cell('a \\\\'), Cell(' b '), Cell(' c ')])",
            source=ANCHOR_TESTS["tables"][1],
        ),
    ]
    agent.step(
        agent.maybe("Running the table tests as they are."),
        agent.pytest("tests/test_tables.py", failures),
    )
    _wander(agent, rng.randint(12, 18), (path, "quillmark/render.py", "quillmark/blocks.py"))
    agent.step(
        "Two problems: the delimiter row never records an alignment, and `_render_cell` "
        "assumes the key exists. I'll compute the alignment from the colons.",
        agent.edit(
            path,
            '        # TODO: alignment (":---", "---:", ":---:")\n        aligns.append("")',
            '        left, right = cell.startswith(":"), cell.endswith(":")\n'
            '        aligns.append("center" if left and right else "right" if right else '
            '"left" if left else "")',
        ),
    )
    agent.step(
        agent.maybe("And make the renderer tolerate cells without alignment."),
        agent.edit(
            path,
            'style = f\' style="text-align: {cell.attrs["align"]}"\''
            ' if cell.attrs["align"] else ""',
            'align = cell.attrs.get("align", "")\n'
            '    style = f\' style="text-align: {align}"\' if align else ""',
        ),
    )
    agent.step(None, agent.pytest("tests/test_tables.py", failures[1:]))
    agent.step(
        "Alignment passes. For the escaped pipe, split only on `|` not preceded by a backslash.",
        agent.edit(
            path,
            '    return line.strip().strip("|").split("|")',
            '    cells = _UNESCAPED_PIPE.split(line.strip().removeprefix("|").removesuffix("|"))\n'
            '    return [cell.replace("\\\\|", "|") for cell in cells]',
        ),
    )
    agent.step(
        agent.maybe("Defining the pattern next to the other module constants."),
        agent.edit(
            path, "import re\n", 'import re\n\n_UNESCAPED_PIPE = re.compile(r"(?<!\\\\)\\|")\n'
        ),
    )
    agent.step(None, agent.pytest("tests/test_tables.py"))
    agent.step(
        agent.maybe("Spec tests touch tables indirectly through paragraphs; running them too."),
        agent.pytest("tests/test_spec.py", verbose=rng.random() < 0.5),
    )
    _wander(agent, rng.randint(5, 9), (path,))
    if rng.random() < 0.5:
        _checks(agent)
    else:
        line = repo.line_of(path, 'align = cell.attrs.get("align", "")')
        _checks(
            agent,
            mypy_error=f"{path}:{line}: error: Incompatible types in assignment "
            '(expression has type "object", variable has type "str")  [assignment]',
        )
        agent.step(
            "`Cell.attrs` is a `dict[str, object]`, so `.get` returns `object`. Converting "
            "explicitly keeps the annotation honest.",
            agent.edit(
                path,
                'align = cell.attrs.get("align", "")',
                'align = str(cell.attrs.get("align") or "")',
            ),
        )
        agent.step(
            None,
            agent.run(".venv/bin/mypy quillmark", "Success: no issues found in 17 source files"),
        )
    agent.step(
        agent.maybe("Diff for review:"), agent.run("git diff --stat && git diff", agent.diff())
    )
    agent.done.append(("table alignment", "Tables: column alignment and escaped pipes"))
    agent.answer(
        "Table alignment is done (quillmark/plugins/tables.py):\n\n"
        "- `_parse_delimiter_row` reads the colons: `:---` left, `:---:` center, `---:` right;\n"
        '- `_render_cell` emits `style="text-align: …"` only when a column has an alignment;\n'
        "- cells are split on unescaped pipes only; `\\|` becomes a literal `|` in the cell.\n\n"
        "test_tables.py passes, as does the whole suite and the spec tests."
    )


def _watch_option(agent: Agent) -> None:
    rng = agent.rng
    agent.ask(
        "Hallo! Kannst du der CLI bitte eine Option `--watch` hinzufügen, die bei Änderungen an "
        "den Markdown-Dateien automatisch neu rendert? Die Ausgabe soll weiterhin in `build/` "
        "landen. Ohne neue Abhängigkeiten bitte, also kein watchdog. Danke! 🙏"
    )
    _orient(agent, big=rng.random() < 0.4)
    agent.step(
        agent.maybe("Ich schaue mir zuerst die CLI und ihre Tests an."),
        agent.read("quillmark/cli.py"),
        agent.read("tests/test_cli.py"),
    )
    _wander(agent, rng.randint(12, 18), ("quillmark/cli.py", "quillmark/render.py"))
    watch_module = '''\
"""Rebuild on change for `quillmark build --watch`, by polling (no extra dependency)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path


def snapshot(paths: Iterable[Path]) -> dict[Path, float]:
    return {path: path.stat().st_mtime for path in paths}


def watch(
    sources: Callable[[], Iterable[Path]],
    rebuild: Callable[[list[Path]], None],
    *,
    interval: float = 0.5,
) -> None:
    """Call `rebuild` with the changed files whenever a source changes, until interrupted."""
    seen = snapshot(sources())
    while True:
        time.sleep(interval)
        now = snapshot(sources())
        changed = [path for path, mtime in now.items() if mtime > seen.get(path, 0)]
        if changed:
            rebuild(changed)
        seen = now
'''
    agent.step(
        "Ein eigenes Modul mit einer einfachen Polling-Schleife über die Änderungszeiten "
        "genügt; so bleibt es ohne Abhängigkeiten.",
        agent.edit("quillmark/watch.py", "", watch_module),
    )
    agent.step(
        agent.maybe("Jetzt die Option in der CLI."),
        agent.edit(
            "quillmark/cli.py",
            "def _report(",
            "def _watch_forever(source: Path, out_dir: Path) -> None:\n"
            '    watch(lambda: source.rglob("*.md"), lambda changed: _build(changed, out_dir))\n'
            "\n\ndef _report(",
        ),
    )
    agent.step(
        agent.maybe("Und der Import."),
        agent.edit(
            "quillmark/cli.py", "import re\n", "import re\n\nfrom quillmark.watch import watch\n"
        ),
    )
    failure = FailingTest(
        "tests/test_cli.py::test_watch_rebuilds",
        "TimeoutError: no line matching 'rebuilt' within 2.0s",
        (
            (
                "tests/conftest.py",
                58,
                "wait_for_line",
                'raise TimeoutError(f"no line matching {pattern!r} within {timeout}s")',
            ),
        ),
        ANCHOR_TESTS["cli"][0],
    )
    agent.step(None, agent.pytest("tests/test_cli.py", [failure]))
    agent.step(
        "Der Test schreibt die Datei innerhalb derselben Sekunde neu; auf diesem Dateisystem "
        "hat `st_mtime` nur Sekundenauflösung, daher ist `mtime > seen` falsch. Ich vergleiche "
        "`st_mtime_ns` auf Ungleichheit.",
        agent.edit(
            "quillmark/watch.py",
            "mtime > seen.get(path, 0)",
            "mtime != seen.get(path)",
        ),
        agent.edit("quillmark/watch.py", "path.stat().st_mtime for", "path.stat().st_mtime_ns for"),
    )
    agent.step(None, agent.pytest("tests/test_cli.py"))
    _wander(agent, rng.randint(5, 9), ("quillmark/watch.py", "quillmark/cli.py"))
    _checks(
        agent,
        mypy_error=(
            'quillmark/watch.py:10: error: Incompatible return value type (got "dict[Path, int]", '
            'expected "dict[Path, float]")  [return-value]'
        ),
    )
    agent.step(
        "mypy hat recht: `st_mtime_ns` ist ein `int`.",
        agent.edit("quillmark/watch.py", "dict[Path, float]", "dict[Path, int]"),
    )
    agent.step(
        None, agent.run(".venv/bin/mypy quillmark", "Success: no issues found in 18 source files")
    )
    agent.step(agent.maybe("Zum Schluss der Diff."), agent.run("git diff", agent.diff()))
    agent.done.append(("--watch", "`quillmark build --watch` rebuilds on change"))
    agent.answer(
        "Fertig! `quillmark build --watch` rendert jetzt bei jeder Änderung neu:\n\n"
        "- neues Modul `quillmark/watch.py`: eine Polling-Schleife (alle 0,5 s) über "
        "`st_mtime_ns`, ohne neue Abhängigkeit;\n"
        "- `quillmark/cli.py`: die Option `--watch` ruft nach dem ersten Build "
        "`_watch_forever` auf; die Ausgabe landet wie bisher in `build/`.\n\n"
        "Wichtig war der Vergleich mit `!=` auf Nanosekunden: mit `st_mtime` und `>` wurden "
        "Änderungen innerhalb derselben Sekunde übersehen (daran scheiterte "
        "`test_watch_rebuilds`). Alle Tests, ruff und mypy sind grün."
    )


def _japanese_docs(agent: Agent) -> None:
    repo, rng = agent.repo, agent.rng
    agent.ask(
        "We're adding Japanese docs (docs/ja/). `quillmark build docs/` now crashes on them "
        "with a UnicodeEncodeError in the TOC. Can you fix it and add a test with a "
        "full-width heading like 「設定ファイル」?"
    )
    line = repo.line_of("quillmark/toc.py", 'return "#"')
    cli_line = repo.line_of("quillmark/cli.py", "def ")
    crash = "\n".join(
        [
            "building docs/ → build/ (21 files)",
            "wrote build/index.html",
            "wrote build/install.html",
            "Traceback (most recent call last):",
            f'  File "{REPO_ROOT}/.venv/bin/quillmark", line 8, in <module>',
            "    sys.exit(main())",
            f'  File "{REPO_ROOT}/quillmark/cli.py", line {cli_line + 4}, in build',
            '    html = render(source.read_text(encoding="utf-8"), toc=True)',
            f'  File "{REPO_ROOT}/quillmark/toc.py", line {line}, in _anchor',
            '    return "#" + title.strip().lower().replace(" ", "-").encode("ascii").decode()',
            "UnicodeEncodeError: 'ascii' codec can't encode characters in position 0-5: "
            "ordinal not in range(128)",
        ]
    )
    agent.step(
        agent.maybe("Reproducing first."),
        agent.run(".venv/bin/quillmark build docs/ -o /tmp/qm-docs", crash, status=1),
    )
    agent.step(
        agent.maybe("Looking at the TOC code and the Japanese page that trips it."),
        agent.read("quillmark/toc.py"),
        agent.read("docs/ja/index.md"),
    )
    _wander(agent, rng.randint(12, 18), ("quillmark/toc.py", "quillmark/slug.py"))
    agent.step(
        "`toc._anchor` builds its own ASCII-only fragment instead of reusing `slugify`, so TOC "
        "links and heading ids can disagree even when nothing crashes. Reuse `slugify`.",
        agent.edit(
            "quillmark/toc.py",
            TOC_ANCHOR,
            '''def _anchor(title: str) -> str:
    """The fragment a TOC entry links to: the heading's own id."""
    return "#" + slugify(title)''',
        ),
        agent.edit(
            "quillmark/toc.py", "import re\n", "import re\n\nfrom quillmark.slug import slugify\n"
        ),
    )
    test = """

def test_fullwidth_heading():
    html = render("[[toc]]\\n\\n## 設定ファイル\\n")
    assert 'href="#設定ファイル"' in html
    assert '<h2 id="設定ファイル">設定ファイル</h2>' in html
"""
    agent.step(
        agent.maybe("Adding the test with a full-width heading."),
        agent.edit(
            "tests/test_toc.py",
            "from quillmark import parse, render\n",
            "from quillmark import parse, render\n" + test,
        ),
    )
    agent.step(None, agent.pytest("tests/test_toc.py"))
    built = "\n".join(
        ["building docs/ → build/ (21 files)"]
        + [f"wrote build/{page}.html" for page in DOC_PAGES]
        + [f"wrote build/ja/{page}.html" for page in DOC_PAGES[:6]]
    )
    agent.step(
        agent.maybe("And the real docs build."),
        agent.run(".venv/bin/quillmark build docs/ -o /tmp/qm-docs", built),
    )
    agent.step(
        agent.maybe("Checking the generated anchors in the Japanese page."),
        agent.run(
            'grep -o \'id="[^"]*"\' /tmp/qm-docs/ja/index.html',
            'id="quillmark-ドキュメント"\nid="インストール"\nid="使い方"\nid="見出しと目次"\n'
            'id="設定ファイル"\nid="よくある質問"',
        ),
    )
    _wander(agent, rng.randint(5, 9), ("quillmark/toc.py",))
    _checks(agent)
    agent.done.append(
        ("日本語 docs", "TOC links reuse `slugify`, so Japanese docs build (設定ファイル)")
    )
    agent.answer(
        "Fixed: `quillmark/toc.py` built its own ASCII-only anchor and crashed on Japanese "
        "headings. It now reuses `slugify`, so TOC links always match heading ids "
        "(e.g. `#設定ファイル`). I added `test_fullwidth_heading` to tests/test_toc.py; "
        "`quillmark build docs/` now writes all 21 pages, and the suite, ruff and mypy pass."
    )


def _slow_render(agent: Agent) -> None:
    repo, rng = agent.repo, agent.rng
    agent.ask(
        "Rendering our 2 MB CHANGELOG takes ~9 s since 2.3.0 (it was well under a second). "
        "Can you profile it and fix the hot spot?"
    )
    agent.step(
        agent.maybe("Timing it first."),
        agent.run(
            "time .venv/bin/quillmark build CHANGELOG.md -o /tmp/cl.html",
            "wrote /tmp/cl.html\n\nreal\t0m9.412s\nuser\t0m9.371s\nsys\t0m0.036s",
        ),
    )
    agent.step(
        agent.maybe("Profiling, sorted by cumulative time."),
        agent.run(
            "python -m cProfile -s cumtime -m quillmark build CHANGELOG.md -o /tmp/cl.html",
            profile_report(rng, repo),
            timeout=300,
        ),
        remark="(also: please keep it working on Python 3.9, we still ship there)",
    )
    agent.step(
        "Almost all the time is in `re.Pattern.match`, called from `inline.scan_emphasis`. "
        "Noted on 3.9, I'll avoid newer syntax. Let me read the emphasis pattern.",
        agent.search(r"_EMPHASIS", ".py"),
    )
    line = repo.line_of("quillmark/inline.py", "_EMPHASIS = ")
    agent.step(None, agent.read("quillmark/inline.py", max(1, line - 20), 60))
    _wander(agent, rng.randint(12, 18), ("quillmark/inline.py", "quillmark/lexer.py"))
    agent.step(
        "`((?:[^*]|\\\\\\*)+)*` nests two quantifiers over overlapping alternatives: on a long "
        "line with an unmatched `*`, the engine tries exponentially many splits. One lazy "
        "quantifier over the same alternatives matches the same strings.",
        agent.edit(
            "quillmark/inline.py",
            '_EMPHASIS = re.compile(r"(\\*+)((?:[^*]|\\\\\\*)+)*\\1")',
            '_EMPHASIS = re.compile(r"(\\*+)((?:\\\\\\*|[^*])+?)\\1")',
        ),
    )
    agent.step(
        agent.maybe("Timing again."),
        agent.run(
            "time .venv/bin/quillmark build CHANGELOG.md -o /tmp/cl.html",
            "wrote /tmp/cl.html\n\nreal\t0m0.388s\nuser\t0m0.351s\nsys\t0m0.031s",
        ),
    )
    agent.step(
        agent.maybe("Emphasis is heavily covered by the spec tests; running those."),
        agent.pytest("tests/test_spec.py", verbose=True),
        agent.pytest("tests/test_inline.py"),
    )
    agent.step(
        agent.maybe("Adding a regression test with a time bound."),
        agent.edit(
            "tests/test_inline.py",
            "from quillmark import parse, render\n",
            "from quillmark import parse, render\n\n\n"
            "@pytest.mark.timeout(1)\n"
            "def test_unmatched_star_is_linear():\n"
            '    render("*" + "a" * 50_000 + "\\n")\n',
        ),
    )
    agent.step(None, agent.pytest("tests/test_inline.py"))
    _wander(agent, rng.randint(5, 9), ("quillmark/inline.py",))
    _checks(agent)
    agent.done.append(
        ("linear emphasis", "Emphasis parsing is linear again (CHANGELOG renders 24× faster)")
    )
    agent.answer(
        "The hot spot was the emphasis regex in `quillmark/inline.py`: "
        "`((?:[^*]|\\\\\\*)+)*` nests quantifiers, so an unmatched `*` on a long line made "
        "the regex engine backtrack exponentially. The new pattern `((?:\\\\\\*|[^*])+?)` "
        "matches the same text with one lazy quantifier.\n\n"
        "CHANGELOG.md now renders in 0.39 s (was 9.4 s). All spec tests pass, and "
        "`test_unmatched_star_is_linear` guards against a regression. Nothing here needs "
        "Python newer than 3.9."
    )


def _windows_paths(agent: Agent) -> None:
    repo, rng = agent.repo, agent.rng
    agent.ask(
        "Salut ! Les tests échouent sur Windows dans la CI : `test_cli.py::test_output_path` "
        "attend `wrote build/index.html` mais obtient `wrote build\\index.html`. Tu peux "
        "regarder ? Le run est le n° 8812345. Merci !"
    )
    agent.step(
        agent.maybe("Je récupère d'abord le log du job qui échoue."),
        agent.run("gh run view 8812345 --log-failed", ci_log(rng, repo)),
    )
    agent.step(
        agent.maybe("Le message vient de la CLI ; je lis le code concerné."),
        agent.search(r"wrote ", ".py"),
        agent.read("quillmark/cli.py"),
    )
    _wander(agent, rng.randint(12, 18), ("quillmark/cli.py",))
    agent.step(
        "`str(out_dir / path.name)` utilise le séparateur du système (`\\` sous Windows). Le "
        "message est destiné à l'utilisateur et aux tests : `as_posix()` le rend stable.",
        agent.edit(
            "quillmark/cli.py",
            'click.echo(f"wrote {str(out_dir / path.name)}")',
            'click.echo(f"wrote {(out_dir / path.name).as_posix()}")',
        ),
    )
    agent.step(None, agent.pytest("tests/test_cli.py"))
    agent.step(
        agent.maybe("Y a-t-il d'autres chemins affichés avec str() ?"),
        agent.search(r"str\((out|path|dest)", ".py"),
    )
    _wander(agent, rng.randint(5, 9), ("quillmark/cli.py",))
    _checks(agent)
    agent.done.append(("Windows paths", "The CLI prints `/`-separated paths on Windows too"))
    agent.answer(
        "C'est corrigé. Dans `quillmark/cli.py`, `_report` affichait le chemin avec "
        "`str(...)`, qui utilise `\\` sous Windows ; il utilise maintenant `.as_posix()`, "
        "donc le message est `wrote build/index.html` sur toutes les plateformes. Les fichiers "
        "eux-mêmes étaient déjà écrits au bon endroit. Tous les tests passent en local ; la CI "
        "Windows devrait repasser au vert au prochain push."
    )


def _release(agent: Agent) -> None:
    rng = agent.rng
    agent.ask(
        "Great work today. Bump the version to 2.4.0, move the Unreleased notes into a 2.4.0 "
        "section of the CHANGELOG, run everything once more and commit. Use a nice commit message."
    )
    agent.step(
        agent.maybe("Reading the version file and the top of the changelog."),
        agent.read("quillmark/_version.py"),
        agent.read("CHANGELOG.md", 1, 40),
    )
    done = dict.fromkeys(agent.done)
    notes = "".join(f"- {note}\n" for _, note in done) or "- Maintenance release\n"
    agent.step(
        None,
        agent.edit("quillmark/_version.py", '"2.3.1"', '"2.4.0"'),
        agent.edit("CHANGELOG.md", "## Unreleased\n", f"## Unreleased\n\n## 2.4.0 \n\n{notes}"),
    )
    agent.step(agent.maybe("Full run before committing."), agent.pytest("tests", verbose=True))
    agent.step(
        None,
        agent.run("git status --short", "\n".join(f" M {path}" for path in agent.changed)),
    )
    labels = ", ".join(label for label, _ in done)
    message = "✨ Release 2.4.0" + (f": {labels}" if labels else "")
    hook = "\n".join(
        [
            "trim trailing whitespace.................................................Failed",
            "- hook id: trailing-whitespace",
            "- exit code: 1",
            "- files were modified by this hook",
            "",
            "Fixing CHANGELOG.md",
            "",
            "fix end of files.........................................................Passed",
            "ruff.....................................................................Passed",
            "mypy.....................................................................Passed",
        ]
    )
    agent.step(
        agent.maybe("Committing."),
        agent.run(f'git commit -am "{message}"', hook, status=1),
    )
    # The hook rewrote the file itself; the agent only commits again.
    changelog = agent.repo.files["CHANGELOG.md"]
    agent.repo.files["CHANGELOG.md"] = changelog.replace("## 2.4.0 \n", "## 2.4.0\n")
    created = (
        "\n create mode 100644 quillmark/watch.py"
        if "quillmark/watch.py" in agent.repo.files
        else ""
    )
    agent.step(
        "The pre-commit hook stripped a trailing space in CHANGELOG.md and aborted the commit. "
        "The file is fixed now; committing again.",
        agent.run(
            f'git commit -am "{message}"',
            "trim trailing whitespace.................................................Passed\n"
            f"[main {''.join(rng.choices('0123456789abcdef', k=7))}] {message}\n"
            f" {rng.randint(9, 16)} files changed, {rng.randint(120, 260)} insertions(+), "
            f"{rng.randint(20, 60)} deletions(-){created}",
        ),
    )
    agent.answer(
        f"Committed as “{message}”. Version 2.4.0 is in `quillmark/_version.py`, and the "
        "CHANGELOG has a 2.4.0 section. The first commit attempt was stopped by the "
        "trailing-whitespace hook (a space after the heading); it is fixed and the second "
        "attempt went through. I did not push or tag: `git tag v2.4.0 && git push --tags` "
        "when you're ready. 🚀"
    )


_Scenario = Callable[[Agent], None]
_REQUESTS: tuple[_Scenario, ...] = (
    _unicode_headings,
    _tables,
    _watch_option,
    _japanese_docs,
    _slow_render,
    _windows_paths,
)


def _plan(rng: random.Random, turns: int) -> list[_Scenario]:
    """`turns` requests: a shuffled selection, repeated when more are asked, release last."""
    order: list[_Scenario] = []
    while len(order) < turns - 1:
        batch = list(_REQUESTS)
        rng.shuffle(batch)
        order += batch
    return [*order[: turns - 1], _release]
