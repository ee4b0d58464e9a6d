"""Agent sessions unlike the shared transcripts, generated for `abridged simulate` tests.

A research agent (web searches and page fetches, OpenAI-style `function` tools), and a
coding agent whose outputs include listings of hundreds of paths and logs of more than
100,000 characters with an error in the middle. Deterministic for a seed.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from pathlib import Path

from abridged.domain.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from tests.support.claude_code_logs import long_claude_code_log


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
    return write_records([m.to_wire() for m in messages], path)


# Larger sessions, as other tools record them: `python -m tests.support.generated_sessions DIR`
# writes the set docs/evaluation.md measures ("Sessions unlike the shared ones").

Record = dict[str, object]

TOPICS = ["lithium supply", "grid storage", "heat pumps", "HVDC links", "sodium-ion"]


def openai_research_records(seed: int, questions: int) -> list[Record]:
    """A research agent in OpenAI chat format: searches, 100,000-character fetched pages,
    listings of 400 paths, analysis runs that sometimes end in a traceback."""
    rng = random.Random(seed)
    records: list[Record] = [
        {"role": "system", "content": "You are a research agent with web and shell tools."}
    ]
    calls = 0
    for q in range(questions):
        topic = rng.choice(TOPICS)
        year = 2020 + q % 6
        records.append(
            {"role": "user", "content": f"Question {q}: compare sources on {topic} for {year}."}
        )
        for step in range(rng.randint(1, 4)):
            calls += 1
            kind = rng.choice(["search", "fetch", "ls", "run"])
            args: dict[str, str]
            if kind == "search":
                args = {"query": f"{topic} report {q}-{step}"}
                slug = topic.replace(" ", "-")
                output = "\n".join(
                    f"{i}. https://example.org/{slug}/{q}/{i} — {topic} {rng.random():.4f}"
                    for i in range(20)
                )
            elif kind == "fetch":
                args = {"url": f"https://example.org/doc/{q}/{step}"}
                words = ["capacity", "GWh", "price", "per", "kWh", "grew", "fell", "2023", "the"]
                output = " ".join(rng.choice(words) for _ in range(16_000))[:100_000]
            elif kind == "ls":
                args = {"path": f"/data/corpus/{q}"}
                output = "\n".join(
                    f"/data/corpus/{q}/batch_{i // 50}/doc_{i:04d}_{rng.randint(0, 9999)}.pdf"
                    for i in range(400)
                )
            else:
                args = {"cmd": f"python analyze.py --topic '{topic}' --year {year}"}
                if rng.random() < 0.3:
                    output = (
                        "Traceback (most recent call last):\n"
                        f'  File "/srv/tools/analyze.py", line {rng.randint(10, 300)}, in main\n'
                        f"KeyError: 'col_{q}_{step}'"
                    )
                else:
                    output = f"rows={rng.randint(100, 9999)} mean={rng.random():.3f}"
            ident = f"call_{calls:05d}"
            function = {"name": kind, "arguments": json.dumps(args)}
            records.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": ident, "type": "function", "function": function}],
                }
            )
            records.append({"role": "tool", "tool_call_id": ident, "content": output})
        records.append(
            {"role": "assistant", "content": f"Question {q}: figures noted. ✓ ünïcødé — 数据 🚀"}
        )
    return records


def parallel_coding_records(seed: int, tasks: int) -> list[Record]:
    """A coding agent in Anthropic format: parallel calls, thinking blocks, `find` listings
    of 800 paths, file reads of up to 1,500 lines, test runs of up to 900 lines with a failure
    in the middle, `git log` with non-ASCII text."""
    rng = random.Random(seed)
    modules = [f"src/pkg{m}/mod_{i}.rs" for m in range(8) for i in range(30)]
    records: list[Record] = []
    calls = 0
    for task in range(tasks):
        target = rng.choice(modules)
        test_path = target.replace("/", "::")[:-3]
        ticket = rng.randint(1000, 9999)
        records.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": f"Fix the failing test in {target} "
                        f"(ticket #{ticket}); run cargo test after.",
                    }
                ],
            }
        )
        for step in range(rng.randint(2, 7)):
            batch: list[tuple[str, str, dict[str, str], str]] = []
            for _ in range(rng.choice([1, 1, 1, 2, 3])):
                calls += 1
                ident = f"toolu_{seed:02d}{calls:06d}"
                kind = rng.choice(["find", "cat", "test", "grep", "edit", "git"])
                inputs, output = _coding_call(rng, kind, modules, target, test_path, task)
                batch.append((ident, kind, inputs, output))
            content: list[Record] = []
            if rng.random() < 0.25:
                content.append(
                    {
                        "type": "thinking",
                        "thinking": f"I should look at {target} step {step}.",
                        "signature": f"sig{seed}-{task}-{step}-" + "A" * 40,
                    }
                )
            content += [
                {"type": "tool_use", "id": i, "name": k, "input": a} for i, k, a, _ in batch
            ]
            records.append({"role": "assistant", "content": content})
            results: list[Record] = []
            for ident, _, _, output in batch:
                result: Record = {"type": "tool_result", "tool_use_id": ident, "content": output}
                if "FAILED" in output:
                    result["is_error"] = True
                results.append(result)
            records.append({"role": "user", "content": results})
        records.append(
            {"role": "assistant", "content": [{"type": "text", "text": f"Fixed {target}. 🚀"}]}
        )
    return records


def _coding_call(
    rng: random.Random, kind: str, modules: list[str], target: str, test_path: str, task: int
) -> tuple[dict[str, str], str]:
    if kind == "find":
        found = [f"./{p}" for p in rng.sample(modules, 200)]
        found += [f"./target/debug/build/dep-{i:03d}/out/gen_{i}.rs" for i in range(600)]
        return {"command": "find . -name '*.rs'"}, "\n".join(found)
    if kind == "cat":
        count = rng.choice([80, 400, 1_500])
        return {"path": rng.choice(modules)}, "\n".join(
            f"{n:5d}\t    let v{n} = compute_{rng.randint(0, 99)}(&ctx, {rng.randint(0, 999)});"
            f" // {'x' * rng.randint(0, 60)}"
            for n in range(1, count)
        )
    if kind == "test":
        lines = [
            f"test {rng.choice(modules).replace('/', '::')[:-3]}::case_{i} ... ok"
            for i in range(rng.randint(50, 900))
        ]
        if rng.random() < 0.4:
            lines.insert(
                rng.randint(0, len(lines)), f"test {test_path}::regression_{task} ... FAILED"
            )
            lines += [
                "",
                "failures:",
                f"---- {test_path}::regression_{task} stdout ----",
                f"thread '{test_path}::regression_{task}' panicked at "
                f"{target}:{rng.randint(10, 900)}:5:",
                f"assertion `left == right` failed: expected {rng.randint(0, 99)} "
                f"got {rng.randint(100, 200)}",
                "error: test failed, to rerun pass `-p pkg --lib`",
            ]
        return {"command": "cargo test --all"}, "\n".join(lines)
    if kind == "grep":
        symbol = f"compute_{rng.randint(0, 99)}"
        return {"pattern": symbol}, "\n".join(
            f"{rng.choice(modules)}:{rng.randint(1, 1500)}:    let v = {symbol}(&ctx, 3);"
            for _ in range(rng.randint(3, 300))
        )
    if kind == "edit":
        return {"path": target, "old": "let v1 =", "new": f"let v1: u32 = // t{task}"}, (
            f"Edited {target}: 1 replacement"
        )
    return {"command": "git log --oneline -n 200"}, "\n".join(
        f"{rng.getrandbits(28):07x} fix {rng.choice(modules)} – ⚠ naïve 修复 #{i}"
        for i in range(200)
    )


def support_records(seed: int, tickets: int) -> list[Record]:
    """A support agent in Anthropic format: hundreds of short tickets, JSON tool outputs
    (orders of up to 40 items, knowledge-base articles of up to 10,000 characters), and
    payment errors."""
    rng = random.Random(seed)
    records: list[Record] = []
    calls = 0
    for _ in range(tickets):
        order = f"ORD-{rng.randint(100000, 999999)}"
        card = rng.randint(1000, 9999)
        records.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": f"Hi, my order {order} arrived damaged, "
                        f"can I get a refund to the card ending {card}?",
                    }
                ],
            }
        )
        for _ in range(rng.randint(1, 4)):
            calls += 1
            ident = f"toolu_s{calls:06d}"
            kind = rng.choice(["get_order", "get_user", "search_kb", "refund"])
            if kind == "search_kb":
                articles = [
                    {
                        "id": i,
                        "title": f"Policy {i}",
                        "body": "Refunds within 30 days. " * rng.randint(5, 400),
                    }
                    for i in range(rng.randint(1, 12))
                ]
                output = json.dumps({"articles": articles})
            elif kind == "refund" and rng.random() < 0.3:
                code = rng.randint(100, 999)
                output = json.dumps(
                    {"error": f"PaymentDeclined: card {card} rejected (code E{code})"}
                )
            else:
                items = [
                    {
                        "sku": f"SKU{rng.randint(0, 99999)}",
                        "qty": rng.randint(1, 3),
                        "note": "ü" * rng.randint(0, 30),
                    }
                    for _ in range(rng.randint(1, 40))
                ]
                output = json.dumps({"order": order, "items": items})
            records.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Let me check."},
                        {
                            "type": "tool_use",
                            "id": ident,
                            "name": kind,
                            "input": {"order_id": order},
                        },
                    ],
                }
            )
            records.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": ident,
                            "content": [{"type": "text", "text": output}],
                        }
                    ],
                }
            )
        records.append(
            {"role": "assistant", "content": [{"type": "text", "text": f"Processed {order}."}]}
        )
    return records


def write_records(records: list[Record], path: Path) -> Path:
    with path.open("w", encoding="utf-8") as file:
        for record in records:
            file.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


EVALUATION_SET: dict[str, Callable[[], list[Record]]] = {
    "research-a": lambda: openai_research_records(seed=42, questions=60),
    "research-b": lambda: openai_research_records(seed=43, questions=140),
    "coding-a": lambda: parallel_coding_records(seed=1, tasks=40),
    "coding-b": lambda: parallel_coding_records(seed=2, tasks=90),
    "support-a": lambda: support_records(seed=3, tickets=250),
}
"""The generated sessions of docs/evaluation.md, by file name."""

CHECK_SET: dict[str, Callable[[], list[Record]]] = {
    "research-201": lambda: openai_research_records(seed=201, questions=40),
    "coding-202": lambda: parallel_coding_records(seed=202, tasks=40),
    "support-203": lambda: support_records(seed=203, tickets=60),
}
"""Sessions the defaults of issue 21 were checked on and never tuned on (docs/evaluation.md):
`python -m tests.support.generated_sessions DIR --check`."""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    if len(args) != 1:
        print("usage: python -m tests.support.generated_sessions DIR [--check]", file=sys.stderr)
        return 2
    folder = Path(args[0])
    folder.mkdir(parents=True, exist_ok=True)
    for name, make in (CHECK_SET if check else EVALUATION_SET).items():
        print(write_records(make(), folder / f"{name}.jsonl"))
    if check:
        print(long_claude_code_log(7).write(folder / "claude-code-long.log.jsonl"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
