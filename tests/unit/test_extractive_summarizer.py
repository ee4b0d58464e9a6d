"""The extractive summarizer keeps what an agent needs later, by priority, within budget."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.summarizers.earlier import _command_line, read_summary
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.ports import SummarizerError
from abridged.domain.messages import ImageBlock, Message, ToolResultBlock, ToolUseBlock
from abridged.domain.tokens import message_tokens
from tests.support.fakes import FakeTokenCounter

REQUEST = "The login test fails since the cookie change. Please fix it without touching the API."
ERROR = (
    "Traceback (most recent call last):\n"
    '  File "src/auth/session.py", line 41, in login\n'
    "    token = sign(user.id)\n"
    "KeyError: 'SECRET_KEY'"
)


def bash(tool_id: str, command: str) -> ToolUseBlock:
    return ToolUseBlock(tool_id, "bash", {"command": command})


def debugging_session() -> list[Message]:
    """A request, a failing test run, a read, an edit, and a passing run."""
    return [
        Message.user(REQUEST),
        Message.assistant("I will run the failing test first.", bash("t1", "pytest tests/auth")),
        Message.user(ToolResultBlock("t1", ERROR, is_error=True)),
        Message.assistant(
            "The root cause is the missing SECRET_KEY in the test settings.",
            ToolUseBlock("t2", "Read", {"file_path": "config/test_settings.py"}),
        ),
        Message.user(ToolResultBlock("t2", "DEBUG = True\nDATABASES = {}\n")),
        Message.assistant(
            ToolUseBlock(
                "t3",
                "str_replace_editor",
                {"command": "str_replace", "path": "config/test_settings.py", "new_str": "K"},
            )
        ),
        Message.user(ToolResultBlock("t3", "The file config/test_settings.py has been edited.")),
        Message.assistant(bash("t4", "pytest tests/auth")),
        Message.user(ToolResultBlock("t4", "12 passed in 0.84s")),
        Message.assistant("Fixed: the test settings now define SECRET_KEY."),
    ]


def summarize(
    messages: list[Message],
    max_tokens: int = 2_000,
    instructions: str | None = None,
    earlier: tuple[str, ...] = (),
) -> str:
    summarizer = ExtractiveSummarizer(FakeTokenCounter())
    return summarizer.summarize(
        messages, max_tokens=max_tokens, instructions=instructions, earlier=earlier
    ).text


def section(text: str, title: str) -> str:
    """The body of one `## title` section of a summary ("" when it is absent)."""
    _, found, rest = text.partition(f"## {title}\n")
    return rest.split("\n## ", 1)[0] if found else ""


def test_keeps_the_users_request_verbatim() -> None:
    assert REQUEST in section(summarize(debugging_session()), "User requests")


def test_keeps_a_failed_tools_error_verbatim() -> None:
    assert ERROR in section(summarize(debugging_session()), "Errors")


def test_keeps_error_lines_and_the_end_of_tracebacks_from_ordinary_output() -> None:
    output = "\n".join(
        [
            "collected 3 items",
            "tests/test_math.py ..F",
            "Traceback (most recent call last):",
            '  File "app/cli.py", line 3, in <module>',
            "    main()",
            '  File "app/cli.py", line 9, in main',
            "    total = int(argv[1])",
            "ValueError: invalid literal for int() with base 10: 'abc'",
            "make: *** [Makefile:12: test] Error 2",
            "process exited with code 2",
        ]
    )
    messages = [
        Message.user("Run the checks."),
        Message.assistant(bash("t1", "make test")),
        Message.user(ToolResultBlock("t1", output)),
    ]
    errors = section(summarize(messages), "Errors")
    assert "ValueError: invalid literal for int() with base 10: 'abc'" in errors
    assert "    total = int(argv[1])" in errors
    assert "make: *** [Makefile:12: test] Error 2" in errors
    assert "process exited with code 2" in errors
    assert "collected 3 items" not in errors


def test_source_code_that_mentions_errors_is_not_an_error() -> None:
    listing = (
        "     1\tclass ConfigError(Exception):\n"
        "     2\t    pass\n"
        "     3\tdef load(path):\n"
        "     4\t    raise ConfigError(f'cannot read {path}')\n"
    )
    messages = [
        Message.user("Show me the config loader."),
        Message.assistant(
            ToolUseBlock("t1", "str_replace_editor", {"command": "view", "path": "app/config.py"})
        ),
        Message.user(ToolResultBlock("t1", listing)),
    ]
    assert section(summarize(messages), "Errors") == ""


def test_lists_file_paths_once_in_order_of_first_appearance() -> None:
    messages = [
        Message.user("Tidy the parsers."),
        Message.assistant(ToolUseBlock("t1", "Read", {"file_path": "src/parsers/csv.py"})),
        Message.user(ToolResultBlock("t1", "see also src/parsers/json_reader.py")),
        Message.assistant(ToolUseBlock("t2", "Read", {"file_path": "src/parsers/csv.py"})),
        Message.user(ToolResultBlock("t2", "ok")),
        Message.assistant(ToolUseBlock("t3", "Edit", {"args": "docs/parsers.md"})),
        Message.user(ToolResultBlock("t3", "edited")),
    ]
    files = section(summarize(messages), "Files").splitlines()
    paths = ["src/parsers/csv.py", "src/parsers/json_reader.py", "docs/parsers.md"]
    assert [next(i for i, line in enumerate(files) if p in line) for p in paths] == sorted(
        next(i for i, line in enumerate(files) if p in line) for p in paths
    )
    assert sum("src/parsers/csv.py" in line for line in files) == 1


def test_prose_and_urls_are_not_file_paths() -> None:
    messages = [
        Message.user("Check https://example.com/docs/api and/or the application/json handler."),
        Message.assistant(ToolUseBlock("t1", "fetch", {"url": "https://example.com/docs/api"})),
        Message.user(
            ToolResultBlock(
                "t1", "Content-Type: application/json, see django.core.serializers.json"
            )
        ),
    ]
    assert section(summarize(messages), "Files") == ""


def test_lists_commands_with_their_outcome() -> None:
    commands = section(summarize(debugging_session()), "Commands").splitlines()
    runs = [line for line in commands if "pytest tests/auth" in line]
    assert len(runs) == 2
    failed, passed = runs
    assert "error" in failed
    assert "KeyError: 'SECRET_KEY'" in failed
    assert "ok" in passed
    assert "error" not in passed


def test_editor_actions_are_not_commands_but_shell_tools_are() -> None:
    messages = [
        Message.user("Build it."),
        Message.assistant(
            ToolUseBlock("t1", "str_replace_editor", {"command": "view", "path": "Makefile"}),
            ToolUseBlock("t2", "run_shell", {"cmd": "make build"}),
        ),
        Message.user(ToolResultBlock("t1", "all: build"), ToolResultBlock("t2", "built")),
    ]
    commands = section(summarize(messages), "Commands")
    assert "make build" in commands
    assert "view" not in commands


def test_keeps_the_assistants_decisions() -> None:
    decisions = section(summarize(debugging_session()), "Decisions")
    assert "The root cause is the missing SECRET_KEY in the test settings." in decisions


def test_omits_empty_sections() -> None:
    text = summarize([Message.user(REQUEST), Message.assistant("Sure.")])
    assert REQUEST in text
    for title in ("Errors", "Files", "Commands", "Decisions"):
        assert f"## {title}" not in text


def test_a_tight_budget_keeps_the_request_and_the_error_and_drops_the_rest() -> None:
    counter = FakeTokenCounter()
    messages = debugging_session()
    for n in range(20):
        messages += [
            Message.assistant(
                f"I will also refactor module number {n} because it is slow.",
                bash(f"x{n}", f"ls src/module_{n}/handlers.py"),
            ),
            Message.user(ToolResultBlock(f"x{n}", f"src/module_{n}/handlers.py")),
        ]
    whole = summarize(messages, max_tokens=100_000)
    assert "## Decisions" in whole
    budget = counter.count(REQUEST) + counter.count(ERROR) + 30
    assert budget < counter.count(whole)

    text = summarize(messages, max_tokens=budget)

    assert REQUEST in text
    assert ERROR in text
    assert "## Decisions" not in text
    assert counter.count(text) <= budget


def long_chat(error: str | None = None) -> list[Message]:
    """A task, then forty follow-up prompts; the last reply's tool call may fail."""
    messages = [Message.user("TASK: move the nightly report from cron to the job queue.")]
    for n in range(40):
        messages += [
            Message.user(f"Follow-up {n}: also check the retry settings of worker {n}."),
            Message.assistant(f"Checked worker {n}."),
        ]
    if error is not None:
        messages += [
            Message.user("Now deploy it."),
            Message.assistant(bash("d1", "make deploy")),
            Message.user(ToolResultBlock("d1", error, is_error=True)),
        ]
    return messages


def test_when_requests_overflow_the_task_and_the_latest_requests_survive() -> None:
    messages = long_chat()
    budget = 150
    assert FakeTokenCounter().count("\n".join(m.text for m in messages)) > 2 * budget

    text = summarize(messages, max_tokens=budget)

    assert "TASK: move the nightly report from cron to the job queue." in text
    assert "Follow-up 39: also check the retry settings of worker 39." in text
    assert "Follow-up 1:" not in text


def test_many_requests_leave_room_for_the_errors() -> None:
    error = "deploy failed: registry.example.com refused the push (403)"
    text = summarize(long_chat(error), max_tokens=150)
    assert error in section(text, "Errors")
    assert "TASK: move the nightly report" in text


def test_a_request_too_long_for_the_budget_keeps_its_beginning_and_says_it_was_cut() -> None:
    opening = "Migrate the billing service from cron jobs to a queue."
    request = opening + " " + " ".join(f"Detail {i} of the migration plan." for i in range(400))
    text = summarize([Message.user(request)], max_tokens=120)
    assert opening in text
    assert "Detail 399" not in text
    assert "truncated" in text
    assert FakeTokenCounter().count(text) <= 120


def test_instructions_come_first_and_favour_matching_lines() -> None:
    messages = [Message.user("Speed up the importer.")]
    messages.append(
        Message.assistant("I decided to switch the database driver to asyncpg for speed.")
    )
    messages += [
        Message.assistant(f"I will tune the parser step number {n} because it allocates.")
        for n in range(30)
    ]
    instructions = "the database driver"
    budget = 60

    focused = summarize(messages, max_tokens=budget, instructions=instructions)
    unfocused = summarize(messages, max_tokens=budget)

    assert focused.startswith(f"Focus: {instructions}")
    assert "asyncpg" in focused
    assert "asyncpg" not in unfocused


def test_a_folded_earlier_summary_carries_its_sections_over() -> None:
    # Folding passes the earlier chunk out of band.
    earlier = summarize(debugging_session())
    messages = [
        Message.user("Now add a regression test for the missing key."),
        Message.assistant(bash("t9", "pytest tests/auth/test_keys.py")),
        Message.user(ToolResultBlock("t9", "1 passed in 0.10s")),
    ]

    folded = summarize(messages, earlier=(earlier,))

    requests = section(folded, "User requests").splitlines()
    assert requests == [f"- {REQUEST}", "- Now add a regression test for the missing key."]
    assert ERROR in section(folded, "Errors")
    assert "- config/test_settings.py" in section(folded, "Files").splitlines()
    commands = section(folded, "Commands")
    assert "pytest tests/auth/test_keys.py" in commands
    assert "KeyError: 'SECRET_KEY'" in commands
    decisions = section(folded, "Decisions")
    assert "The root cause is the missing SECRET_KEY in the test settings." in decisions
    assert folded.count("## User requests") == 1


def test_an_earlier_summary_alone_reads_back_as_itself() -> None:
    for instructions in (None, "the SECRET_KEY"):
        earlier = summarize(debugging_session(), instructions=instructions)
        body = earlier.split("\n\n", 1)[1] if instructions else earlier
        assert summarize([], earlier=(earlier,)) == body


def test_what_the_service_adds_to_an_earlier_chunk_is_read_back_too() -> None:
    history = summarize(debugging_session())
    current = summarize([Message.user("Deploy it to staging.")], instructions="the deploy")
    chunk = (
        f"{history}\n\n## The current request so far\n{current}\n\n"
        "Files read: config/test_settings.py, docs/auth.md\n"
        "Files modified: src/auth/session.py"
    )

    folded = summarize([Message.user("Ship it.")], earlier=(chunk,))

    requests = section(folded, "User requests").splitlines()
    assert requests == [f"- {REQUEST}", "- Deploy it to staging.", "- Ship it."]
    files = section(folded, "Files").splitlines()
    assert {"- docs/auth.md", "- src/auth/session.py"} <= set(files)
    for addition in ("Files read", "The current request so far", "Focus"):
        assert addition not in folded


def test_a_user_message_that_only_mentions_a_heading_is_still_a_request() -> None:
    prompt = "Why does the summary start with ## User requests?"
    assert section(summarize([Message.user(prompt)]), "User requests") == f"- {prompt}"


def test_same_messages_give_the_same_summary() -> None:
    messages = debugging_session()
    first = ExtractiveSummarizer(FakeTokenCounter()).summarize(messages, max_tokens=300)
    second = ExtractiveSummarizer(FakeTokenCounter()).summarize(messages, max_tokens=300)
    assert first == second


def test_with_nothing_to_keep_it_says_how_many_messages_it_covered() -> None:
    messages = [
        Message.user(ImageBlock("url", url="https://example.com/screenshot.png")),
        Message.assistant("Nice."),
        Message.user(ImageBlock("url", url="https://example.com/other.png")),
    ]
    text = summarize(messages, max_tokens=40)
    assert text.strip()
    assert "3 messages" in text


def test_reports_its_model_and_token_counts() -> None:
    counter = TiktokenCounter()
    messages = debugging_session()
    summary = ExtractiveSummarizer(counter).summarize(messages, max_tokens=500)
    assert summary.model == "extractive-v1"
    assert summary.output_tokens == counter.count(summary.text)
    assert summary.input_tokens == sum(message_tokens(m, counter.count) for m in messages)


def test_estimates_the_input_tokens_of_a_long_history_closely() -> None:
    counter = TiktokenCounter()
    messages = [Message.user("Find why the nightly import is slow.")]
    for n in range(300):
        messages.append(
            Message.assistant(
                f"Step {n}: I will profile the parser on batch {n}.",
                bash(f"t{n}", f"python -m cProfile -s cumtime import.py --batch {n}"),
            )
        )
        rows = "".join(f"{i:>6} {0.01 * i:8.3f} parser.py:{i}(parse_row_{n})\n" for i in range(12))
        messages.append(Message.user(ToolResultBlock(f"t{n}", rows)))
    # Well beyond the 64 KiB of text that is still counted exactly.
    assert sum(len(m.text) + sum(len(r.text) for r in m.tool_results) for m in messages) > 100_000
    exact = sum(message_tokens(m, counter.count) for m in messages)

    summary = ExtractiveSummarizer(counter).summarize(messages, max_tokens=500)

    assert abs(summary.input_tokens - exact) <= 0.05 * exact


@pytest.mark.parametrize("max_tokens", [15, 0])
def test_refuses_a_budget_below_sixteen_tokens(max_tokens: int) -> None:
    with pytest.raises(SummarizerError, match="at least 16"):
        summarize(debugging_session(), max_tokens=max_tokens)


def test_summarizes_a_megabyte_of_history_within_its_budget() -> None:
    counter = TiktokenCounter()
    counter.count("load the encoding before timing")
    messages = [Message.user("Port the test-suite to pytest and keep it green.")]
    listing = "".join(f"src/pkg/module_{i}.py: def handler_{i}(request): ...\n" for i in range(40))
    for n in range(500):
        failed = n % 25 == 0
        output = listing + (
            f"FAILED tests/test_{n}.py::test_case - AssertionError\n" if failed else ""
        )
        messages.append(
            Message.assistant(
                f"Step {n}: I will check the handlers because test {n} may depend on them.",
                bash(f"t{n}", f"grep -rn handler src/pkg --include=*.py | head -{n}"),
            )
        )
        messages.append(Message.user(ToolResultBlock(f"t{n}", output, is_error=failed)))
    assert len(messages) > 1_000
    assert sum(len(m.text) + sum(len(r.text) for r in m.tool_results) for m in messages) > 1_000_000

    # Its speed on this input is measured by `make bench` (tests/benchmarks/components.py).
    summary = ExtractiveSummarizer(counter).summarize(messages, max_tokens=4_000)

    assert counter.count(summary.text) <= 4_000
    assert "FAILED tests/test_475.py::test_case - AssertionError" in summary.text


_COMMAND = re.compile(r"(`+)(.+?)\1 → (.*)")
"""How a command line was read before: the reference `_command_line` must match exactly."""


@settings(max_examples=500)
@given(st.lists(st.sampled_from(["`", "``", " → ", "→", " ", "a", "\n"]), max_size=14))
def test_a_command_line_is_read_as_the_expression_reads_it(parts: list[str]) -> None:
    line = "".join(parts)
    match = _COMMAND.fullmatch(line)
    assert _command_line(line) == (None if match is None else (match.group(2), match.group(3)))


def test_a_command_written_in_a_code_span_is_read_back() -> None:
    entries = read_summary("## Commands\n- ``` ``a`` ``` → exit 0\n- `ls -la` → 3 files")
    assert entries is not None
    assert [(e.text, e.detail) for e in entries] == [("``a``", "exit 0"), ("ls -la", "3 files")]
