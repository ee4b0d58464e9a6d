"""Agent sessions unlike the shared transcripts, generated for `abridged simulate` tests.

A research agent (web searches and page fetches, OpenAI-style `function` tools), and a
coding agent whose outputs include listings of hundreds of paths and logs of more than
100,000 characters with an error in the middle. Deterministic for a seed.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from abridged.domain.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock


def _listing(rng: random.Random, count: int) -> str:
    dirs = ["src/core", "src/api", "src/ui/widgets", "tests/unit", "docs/guide", "scripts"]
    return "\n".join(
        f"./{rng.choice(dirs)}/module_{i:04d}.{rng.choice(['py', 'ts', 'md'])}"
        for i in range(count)
    )


def _huge_log(rng: random.Random, error: str) -> str:
    lines = [
        f"[{i:06d}] GET /api/items/{rng.randint(1, 9999)} 200 {rng.randint(1, 90)}ms"
        for i in range(2_400)
    ]
    lines.insert(1_300, error)
    return "\n".join(lines)


def coding_session(seed: int, tasks: int = 6) -> list[Message]:
    """A coding agent: per task a request, listings, reads, edits, a failing then passing run."""
    rng = random.Random(seed)
    messages: list[Message] = []
    ids = iter(range(1, 10_000))

    def call(name: str, output: str, error: bool = False, **inputs: str) -> None:
        ident = f"call_{next(ids):05d}"
        messages.append(Message.assistant(ToolUseBlock(ident, name, dict(inputs))))
        messages.append(Message.user(ToolResultBlock(ident, output, is_error=error)))

    for task in range(tasks):
        module = f"src/core/engine_{task}.py"
        messages.append(Message.user(f"Task {task}: make the engine {task} retry on timeouts."))
        call(
            "shell",
            _listing(rng, rng.randint(300, 600)),
            command=f"find . -name '*.py' -path '*{task}*'",
        )
        call("read_file", "\n".join(f"def f{i}(): pass" for i in range(200)), path=module)
        call("edit_file", "ok", path=module, old="pass", new="retry()")
        error = f"TimeoutError: engine {task} gave up after {rng.randint(3, 9)} retries"
        call(
            "shell",
            _huge_log(rng, error),
            True,
            command=f"python -m engine_{task} --replay logs/day{task}.log",
        )
        call(
            "shell",
            f"FAILED tests/unit/test_engine_{task}.py::test_retry - AssertionError",
            True,
            command=f"pytest tests/unit/test_engine_{task}.py",
        )
        call("edit_file", "ok", path=f"tests/unit/test_engine_{task}.py", old="1", new="2")
        call("shell", "3 passed", command=f"pytest tests/unit/test_engine_{task}.py")
        messages.append(Message.assistant(TextBlock(f"Engine {task} now retries.")))
    return messages


def research_session(seed: int, questions: int = 5) -> list[Message]:
    """A research agent: questions answered by searches and long fetched pages."""
    rng = random.Random(seed)
    messages: list[Message] = []
    ids = iter(range(1, 10_000))
    for q in range(questions):
        messages.append(
            Message.user(
                f"Question {q}: what changed in release {q}.{rng.randint(0, 9)} of the parser?"
            )
        )
        for page in range(4):
            ident = f"call_{next(ids):05d}"
            query = f"parser release {q} change {page}"
            messages.append(Message.assistant(ToolUseBlock(ident, "web_search", {"query": query})))
            results = "\n".join(
                f"https://example.org/notes/{q}/{page}/{i} - result {i}" for i in range(30)
            )
            messages.append(Message.user(ToolResultBlock(ident, results)))
            ident = f"call_{next(ids):05d}"
            messages.append(
                Message.assistant(
                    ToolUseBlock(
                        ident, "fetch_page", {"url": f"https://example.org/notes/{q}/{page}/0"}
                    )
                )
            )
            body = " ".join(
                f"sentence {i} about the parser." for i in range(rng.randint(800, 1_600))
            )
            messages.append(Message.user(ToolResultBlock(ident, body)))
        messages.append(Message.assistant(TextBlock(f"Release {q} changed the tokenizer.")))
    return messages


def write_jsonl(messages: list[Message], path: Path) -> Path:
    path.write_text("\n".join(json.dumps(m.to_wire()) for m in messages) + "\n", encoding="utf-8")
    return path
