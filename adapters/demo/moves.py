"""Moves every request repeats: getting oriented, exploring, and the checks before answering."""

from __future__ import annotations

import re
from collections.abc import Sequence

from abridged.adapters.demo.agent import Agent
from abridged.adapters.demo.codegen import MARKDOWN_SAMPLES, VERBS
from abridged.adapters.demo.outputs import COMMIT_SUBJECTS, git_blame, git_log, html_for


def orient(agent: Agent, big: bool) -> None:
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


def wander(agent: Agent, steps: int, around: Sequence[str]) -> None:
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


def run_checks(agent: Agent, mypy_error: str | None = None) -> None:
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
