"""Requests for new features: table alignment, and a `--watch` option for the CLI."""

from __future__ import annotations

from abridged.adapters.demo.agent import Agent
from abridged.adapters.demo.moves import orient, run_checks, wander
from abridged.adapters.demo.outputs import FailingTest
from abridged.adapters.demo.sources import ANCHOR_TESTS


def table_alignment(agent: Agent) -> None:
    repo, rng = agent.repo, agent.rng
    path = "quillmark/plugins/tables.py"
    agent.ask(
        "Please finish GitHub-style table alignment in the tables plugin (`:---`, `:---:`, "
        "`---:`). There's a TODO in plugins/tables.py. Also make sure an escaped pipe `\\|` "
        "inside a cell doesn't split it."
    )
    orient(agent, big=False)
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
    wander(agent, rng.randint(12, 18), (path, "quillmark/render.py", "quillmark/blocks.py"))
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
    wander(agent, rng.randint(5, 9), (path,))
    if rng.random() < 0.5:
        run_checks(agent)
    else:
        line = repo.line_of(path, 'align = cell.attrs.get("align", "")')
        run_checks(
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


def watch_option(agent: Agent) -> None:
    rng = agent.rng
    agent.ask(
        "Hallo! Kannst du der CLI bitte eine Option `--watch` hinzufügen, die bei Änderungen an "
        "den Markdown-Dateien automatisch neu rendert? Die Ausgabe soll weiterhin in `build/` "
        "landen. Ohne neue Abhängigkeiten bitte, also kein watchdog. Danke! 🙏"
    )
    orient(agent, big=rng.random() < 0.4)
    agent.step(
        agent.maybe("Ich schaue mir zuerst die CLI und ihre Tests an."),
        agent.read("quillmark/cli.py"),
        agent.read("tests/test_cli.py"),
    )
    wander(agent, rng.randint(12, 18), ("quillmark/cli.py", "quillmark/render.py"))
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
    wander(agent, rng.randint(5, 9), ("quillmark/watch.py", "quillmark/cli.py"))
    run_checks(
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
