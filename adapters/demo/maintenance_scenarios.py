"""Maintenance requests: a slow render, paths on Windows, and the closing release."""

from __future__ import annotations

from abridged.adapters.demo.agent import Agent
from abridged.adapters.demo.moves import run_checks, wander
from abridged.adapters.demo.outputs import ci_log, profile_report


def slow_render(agent: Agent) -> None:
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
    wander(agent, rng.randint(12, 18), ("quillmark/inline.py", "quillmark/lexer.py"))
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
    wander(agent, rng.randint(5, 9), ("quillmark/inline.py",))
    run_checks(agent)
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


def windows_paths(agent: Agent) -> None:
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
    wander(agent, rng.randint(12, 18), ("quillmark/cli.py",))
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
    wander(agent, rng.randint(5, 9), ("quillmark/cli.py",))
    run_checks(agent)
    agent.done.append(("Windows paths", "The CLI prints `/`-separated paths on Windows too"))
    agent.answer(
        "C'est corrigé. Dans `quillmark/cli.py`, `_report` affichait le chemin avec "
        "`str(...)`, qui utilise `\\` sous Windows ; il utilise maintenant `.as_posix()`, "
        "donc le message est `wrote build/index.html` sur toutes les plateformes. Les fichiers "
        "eux-mêmes étaient déjà écrits au bon endroit. Tous les tests passent en local ; la CI "
        "Windows devrait repasser au vert au prochain push."
    )


def release(agent: Agent) -> None:
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
