"""Reading recorded transcripts: the shared real ones, and the errors a bad file gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from abridged.adapters.transcripts import (
    PERMISSIVE_SCHEMA,
    TranscriptError,
    load_transcript,
    parse_transcript,
    tools_for,
)
from abridged.domain.messages import JSON, Message, Role, TextBlock, ToolUseBlock

TRANSCRIPTS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "transcripts"
REAL_FILES = sorted(TRANSCRIPTS.glob("*.jsonl")) if TRANSCRIPTS.is_dir() else []

real = pytest.mark.skipif(not REAL_FILES, reason=f"no shared transcripts at {TRANSCRIPTS}")


def _meta(path: Path) -> dict[str, JSON]:
    meta_path = path.with_suffix(".meta.json")
    if not meta_path.is_file():
        return {}
    meta: dict[str, JSON] = json.loads(meta_path.read_text(encoding="utf-8"))
    return meta


def _used_tool_names(messages: tuple[Message, ...]) -> set[str]:
    return {use.name for message in messages for use in message.tool_uses}


# The shared real transcripts


@real
@pytest.mark.transcripts
@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.stem)
def test_every_line_of_a_real_transcript_is_one_message(path: Path) -> None:
    lines = [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]

    transcript = load_transcript(path)

    assert len(transcript.messages) == len(lines)
    assert len(transcript.line_numbers) == len(lines)
    assert transcript.messages[0] == Message.from_wire(json.loads(lines[0]))
    assert transcript.messages[-1] == Message.from_wire(json.loads(lines[-1]))
    assert transcript.source == str(path)


@real
@pytest.mark.transcripts
@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.stem)
def test_system_prompt_and_model_come_from_the_meta_file(path: Path) -> None:
    meta = _meta(path)

    transcript = load_transcript(path)

    system = meta.get("system")
    assert transcript.system == (system if isinstance(system, str) else "")
    model = meta.get("model")
    assert transcript.model == (model if isinstance(model, str) else None)


@real
@pytest.mark.transcripts
def test_some_real_transcripts_have_a_system_prompt() -> None:
    prompts = [load_transcript(path).system for path in REAL_FILES]

    assert any(len(prompt) > 500 for prompt in prompts)


@real
@pytest.mark.transcripts
@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.stem)
def test_every_tool_a_real_transcript_calls_is_defined_once(path: Path) -> None:
    transcript = load_transcript(path)

    names = [tool["name"] for tool in transcript.tools]
    assert len(names) == len(set(names))
    assert _used_tool_names(transcript.messages) <= set(names)
    for tool in transcript.tools:
        assert set(tool) <= {"name", "description", "input_schema"}
        assert isinstance(tool["input_schema"], dict)
        assert tool["input_schema"]["type"] == "object"


@real
@pytest.mark.transcripts
def test_openhands_tools_are_converted_to_anthropic_definitions() -> None:
    paths = [p for p in REAL_FILES if p.name.startswith("openhands-")]
    if not paths:
        pytest.skip("no OpenHands transcript in the shared data")
    for path in paths:
        functions = [tool["function"] for tool in _meta(path)["tools"]]

        transcript = load_transcript(path)

        defined = transcript.tools[: len(functions)]
        assert [tool["name"] for tool in defined] == [f["name"] for f in functions]
        for tool, function in zip(defined, functions, strict=True):
            assert tool["description"] == function["description"]
            assert tool["input_schema"] == function["parameters"]
            assert "function" not in tool
            assert "type" not in tool


# Bad input: small files written for the test


def _write(tmp_path: Path, lines: list[str], name: str = "session.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD_USER = json.dumps({"role": "user", "content": "Hello"})
GOOD_ASSISTANT = json.dumps({"role": "assistant", "content": [{"type": "text", "text": "Hi"}]})


def test_a_line_that_is_not_json_is_reported_with_its_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, [GOOD_USER, GOOD_ASSISTANT, '{"role": "user", "content": '])

    with pytest.raises(TranscriptError) as caught:
        load_transcript(path)

    assert caught.value.line == 3
    assert caught.value.path == str(path)
    assert f"{path} line 3:" in str(caught.value)
    assert "not valid JSON" in str(caught.value)


def test_a_block_without_a_type_is_reported_with_its_line(tmp_path: Path) -> None:
    bad = json.dumps({"role": "assistant", "content": [{"text": "x"}]})
    path = _write(tmp_path, [GOOD_USER, bad])

    with pytest.raises(TranscriptError) as caught:
        load_transcript(path)

    assert caught.value.line == 2
    assert str(caught.value) == f"{path} line 2: a content block needs a string 'type', got None"


def test_line_numbers_count_the_blank_lines_that_are_skipped(tmp_path: Path) -> None:
    path = _write(tmp_path, [GOOD_USER, "", "   ", GOOD_ASSISTANT, "", '{"role": "robot"}'])

    with pytest.raises(TranscriptError) as caught:
        load_transcript(path)

    assert caught.value.line == 6
    assert "role must be 'user', 'assistant' or 'system', got 'robot'" in str(caught.value)


def test_blank_lines_are_skipped_and_each_message_keeps_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path, ["", GOOD_USER, "", "", GOOD_ASSISTANT, ""])

    transcript = load_transcript(path)

    assert [m.role for m in transcript.messages] == [Role.USER, Role.ASSISTANT]
    assert transcript.line_numbers == (2, 5)


def test_a_missing_file_is_a_transcript_error(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.jsonl"

    with pytest.raises(TranscriptError) as caught:
        load_transcript(path)

    assert caught.value.path == str(path)
    assert caught.value.line is None
    assert str(path) in str(caught.value)


def test_a_directory_is_a_transcript_error(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="directory"):
        load_transcript(tmp_path)


def test_a_transcript_without_messages_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, ["", "  "])

    with pytest.raises(TranscriptError, match="no messages"):
        load_transcript(path)


def test_bytes_that_are_not_utf8_are_reported_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(
        GOOD_USER.encode() + b"\n" + '{"role": "assistant", "content": "caf\xe9"}'.encode("latin-1")
    )

    with pytest.raises(TranscriptError) as caught:
        load_transcript(path)

    assert caught.value.line == 2
    assert "UTF-8" in str(caught.value)


def test_a_line_separator_inside_a_string_does_not_split_the_message(tmp_path: Path) -> None:
    text = "first\u2028second\u0085third"
    path = tmp_path / "separators.jsonl"
    line = json.dumps({"role": "user", "content": text}, ensure_ascii=False)
    path.write_text(line + "\n" + GOOD_ASSISTANT + "\n", encoding="utf-8")

    transcript = load_transcript(path)

    assert len(transcript.messages) == 2
    assert transcript.messages[0].text == text


def test_a_broken_meta_file_is_reported_by_its_own_name(tmp_path: Path) -> None:
    path = _write(tmp_path, [GOOD_USER])
    meta_path = tmp_path / "session.meta.json"
    meta_path.write_text('{"system": "You are', encoding="utf-8")

    with pytest.raises(TranscriptError) as caught:
        load_transcript(path)

    assert caught.value.path == str(meta_path)
    assert str(meta_path) in str(caught.value)
    assert "not valid JSON" in str(caught.value)


def test_a_meta_file_that_is_not_an_object_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, [GOOD_USER])
    (tmp_path / "session.meta.json").write_text('["system"]', encoding="utf-8")

    with pytest.raises(TranscriptError, match=r"session\.meta\.json: must be a JSON object"):
        load_transcript(path)


def test_a_tool_definition_without_a_name_is_reported_against_the_meta_file(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, [GOOD_USER])
    meta = {"tools": [{"type": "function", "function": {"description": "no name"}}]}
    (tmp_path / "session.meta.json").write_text(json.dumps(meta), encoding="utf-8")

    with pytest.raises(TranscriptError) as caught:
        load_transcript(path)

    assert caught.value.path.endswith("session.meta.json")
    assert "tools[0]" in str(caught.value)


def test_meta_fields_of_the_wrong_type_are_ignored(tmp_path: Path) -> None:
    path = _write(tmp_path, [GOOD_USER])
    meta = {"system": [{"type": "text", "text": "structured"}], "model": 3}
    (tmp_path / "session.meta.json").write_text(json.dumps(meta), encoding="utf-8")

    transcript = load_transcript(path)

    assert transcript.system == ""
    assert transcript.model is None


def test_the_meta_file_gives_system_prompt_model_and_tools(tmp_path: Path) -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"q": "x"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "none"}
    path = _write(
        tmp_path,
        [
            GOOD_USER,
            json.dumps({"role": "assistant", "content": [use]}),
            json.dumps({"role": "user", "content": [result]}),
        ],
    )
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    meta = {
        "system": "Be brief.",
        "model": "claude-test",
        "tools": [{"name": "grep", "description": "Search.", "input_schema": schema}],
    }
    (tmp_path / "session.meta.json").write_text(json.dumps(meta), encoding="utf-8")

    transcript = load_transcript(path)

    assert transcript.system == "Be brief."
    assert transcript.model == "claude-test"
    assert transcript.tools == ({"name": "grep", "description": "Search.", "input_schema": schema},)


# Parsing lines directly


def test_parse_errors_name_the_given_source() -> None:
    with pytest.raises(TranscriptError) as caught:
        parse_transcript([GOOD_USER, "not json"], source="upload.jsonl")

    assert str(caught.value).startswith("upload.jsonl line 2: not valid JSON")


def test_recorded_traffic_the_api_takes_is_made_valid_with_notes() -> None:
    # The API joins two user messages in a row into one turn; a record cut from a longer one
    # starts with a reply; an agent that numbers its calls anew sends an id twice.
    def call(tool_id: str) -> str:
        block = {"type": "tool_use", "id": tool_id, "name": "bash", "input": {"c": "ls"}}
        return json.dumps({"role": "assistant", "content": [block]})

    def result(tool_id: str) -> str:
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": "a"}
        return json.dumps({"role": "user", "content": [block]})

    ask = json.dumps({"role": "user", "content": "Again"})
    lines = [GOOD_ASSISTANT, GOOD_USER, ask, call("c1"), result("c1"), call("c1"), result("c1")]

    transcript = parse_transcript(lines)

    roles = [m.role for m in transcript.messages]
    assert roles == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT, Role.USER]
    assert transcript.messages[0].text == "Hello\nAgain"
    assert [u.id for m in transcript.messages for u in m.tool_uses] == ["c1", "c1_2"]
    assert [r.tool_use_id for r in transcript.messages[4].tool_results] == ["c1_2"]
    assert transcript.line_numbers == (2, 4, 5, 6, 7)
    assert len(transcript.notes) == 2
    assert "c1 -> c1_2" in transcript.notes[1]


def test_a_conversation_already_valid_is_read_as_it_is() -> None:
    block = {"type": "tool_result", "tool_use_id": "toolu_9", "content": "?"}
    call = {"type": "tool_use", "id": "toolu_9", "name": "bash", "input": {}}
    lines = [
        GOOD_USER,
        json.dumps({"role": "assistant", "content": [call]}),
        json.dumps({"role": "user", "content": [block, {"type": "text", "text": "  "}]}),
    ]

    transcript = parse_transcript(lines)

    assert transcript.messages[2].content[1] == TextBlock("  ")
    assert transcript.notes == ()


def test_a_record_with_no_user_prompt_is_refused() -> None:
    orphan = {"type": "tool_result", "tool_use_id": "toolu_9", "content": "?"}
    lines = [GOOD_ASSISTANT, GOOD_ASSISTANT, json.dumps({"role": "user", "content": [orphan]})]

    with pytest.raises(TranscriptError, match="no conversation"):
        parse_transcript(lines)


def test_openai_function_definitions_in_meta_are_converted() -> None:
    parameters = {"type": "object", "properties": {"command": {"type": "string"}}}
    meta = {
        "tools": [
            {
                "type": "function",
                "function": {"name": "bash", "description": "Run it.", "parameters": parameters},
            }
        ]
    }

    transcript = parse_transcript([GOOD_USER], meta=meta)

    assert transcript.tools == (
        {"name": "bash", "description": "Run it.", "input_schema": parameters},
    )


# Completing tool definitions


def _calls(*names: str) -> tuple[Message, ...]:
    uses = [ToolUseBlock(f"toolu_{i}", name, {}) for i, name in enumerate(names)]
    return (Message.user("go"), Message(Role.ASSISTANT, (TextBlock("calling"), *uses)))


def test_tools_used_but_not_defined_get_a_permissive_definition() -> None:
    tools = tools_for(_calls("Bash", "Read", "Bash"))

    assert [tool["name"] for tool in tools] == ["Bash", "Read"]
    for tool in tools:
        assert tool["input_schema"] == PERMISSIVE_SCHEMA
        assert isinstance(tool["description"], str)
        assert tool["description"]


def test_defined_tools_come_first_in_their_order_and_are_not_duplicated() -> None:
    defined = [
        {"name": "Read", "description": "Read a file.", "input_schema": {"type": "object"}},
        {"type": "function", "function": {"name": "Edit", "parameters": {"type": "object"}}},
        {"name": "Read", "description": "again", "input_schema": {"type": "object"}},
    ]

    tools = tools_for(_calls("Grep", "Read", "Task"), defined)

    assert [tool["name"] for tool in tools] == ["Read", "Edit", "Grep", "Task"]
    assert tools[0] == defined[0]
    assert tools[1] == {"name": "Edit", "input_schema": {"type": "object"}}
    assert tools[2]["input_schema"] == PERMISSIVE_SCHEMA


def test_a_permissive_schema_is_a_fresh_copy_each_time() -> None:
    first = tools_for(_calls("Bash"))[0]
    first["input_schema"]["additionalProperties"] = False

    second = tools_for(_calls("Bash"))[0]

    assert second["input_schema"] == {"type": "object", "additionalProperties": True}
