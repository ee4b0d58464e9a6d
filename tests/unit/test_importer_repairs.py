"""What the importers repair in a record, and that each repair keeps what was recorded and
says what it changed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from abridged.adapters.claude_code import import_claude_code
from abridged.adapters.importers import read_records
from abridged.adapters.openai_chat import import_openai
from abridged.adapters.transcripts import TranscriptError, load_transcript, parse_transcript
from abridged.domain.messages import TextBlock, ToolResultBlock, ToolUseBlock
from tests.support.claude_code_logs import Log, text, thinking, tool_use
from tests.support.red_team import LINEAR, growth
from tests.unit.test_importers import assert_valid_conversation


def write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def openai_call(call_id: str, name: str = "f", arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_openai_ids_that_read_alike_in_the_apis_characters_stay_two_calls(
    tmp_path: Path,
) -> None:
    path = write_lines(
        tmp_path / "chat.jsonl",
        [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [openai_call("call:1", "f"), openai_call("call_1", "g")],
            },
            {"role": "tool", "tool_call_id": "call:1", "content": "RESULT-ONE"},
            {"role": "tool", "tool_call_id": "call_1", "content": "RESULT-TWO"},
            {"role": "assistant", "content": "ok"},
        ],
    )

    transcript = load_transcript(path)

    assert_valid_conversation(transcript.messages)
    calls = transcript.messages[1].content
    assert [(c.id, c.name) for c in calls if isinstance(c, ToolUseBlock)] == [
        ("call_1", "f"),
        ("call_1_2", "g"),
    ]
    assert transcript.messages[2].content == (
        ToolResultBlock("call_1", "RESULT-ONE"),
        ToolResultBlock("call_1_2", "RESULT-TWO"),
    )
    assert not any("no recorded result" in note for note in transcript.notes)
    assert any("'call_1' is call_1_2" in note for note in transcript.notes)


def test_two_results_recorded_for_one_call_are_both_kept_with_a_note(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "chat.jsonl",
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [openai_call("c1")]},
            {"role": "tool", "tool_call_id": "c1", "content": "FIRST-PART"},
            {"role": "tool", "tool_call_id": "c1", "content": "SECOND-PART"},
            {"role": "assistant", "content": "ok"},
        ],
    )

    transcript = load_transcript(path)

    assert_valid_conversation(transcript.messages)
    assert transcript.messages[2].content == (ToolResultBlock("c1", "FIRST-PART\n\nSECOND-PART"),)
    assert any("more than one result recorded for c1" in n for n in transcript.notes)


def test_two_results_of_blocks_for_one_call_are_joined_block_by_block(tmp_path: Path) -> None:
    path = (
        Log()
        .user("q")
        .assistant(tool_use("t1", "Bash", command="ls"))
        .user([{"type": "tool_result", "tool_use_id": "t1", "content": "one"}])
        .user(
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [text("two")],
                    "is_error": True,
                }
            ]
        )
        .assistant(text("done"))
        .write(tmp_path / "s.jsonl")
    )

    transcript = load_transcript(path)

    assert_valid_conversation(transcript.messages)
    (result,) = transcript.messages[2].content
    assert isinstance(result, ToolResultBlock)
    assert result.content == (TextBlock("one"), TextBlock("two"))
    assert result.is_error
    assert any("more than one result recorded for t1" in n for n in transcript.notes)


SIGNATURE = "EqQBCkYIBxgCKkDmBm9w3wJ7+gx/abc=="


def test_a_reply_retried_keeps_the_first_attempts_text_and_notes_the_thinking_dropped(
    tmp_path: Path,
) -> None:
    path = (
        Log()
        .user("question")
        .assistant(text("FIRST-REPLY-TEXT"))
        .assistant(thinking("t", SIGNATURE), text("second"))
        .user("next")
        .assistant(text("end"))
        .write(tmp_path / "s.jsonl")
    )

    transcript = load_transcript(path)

    assert_valid_conversation(transcript.messages)
    assert transcript.messages[1].content == (TextBlock("FIRST-REPLY-TEXT"), TextBlock("second"))
    assert any("1 thinking block(s) of a reply" in n for n in transcript.notes)


def test_thinking_right_before_a_call_is_kept_in_a_reply_joined_to_the_one_before(
    tmp_path: Path,
) -> None:
    path = (
        Log()
        .user("question")
        .assistant(text("Looking."))
        .assistant(thinking("run it", SIGNATURE), tool_use("t1", "Bash", command="ls"))
        .results(("t1", "a.txt"))
        .assistant(text("end"))
        .write(tmp_path / "s.jsonl")
    )

    transcript = load_transcript(path)

    assert_valid_conversation(transcript.messages)
    assert [type(b).__name__ for b in transcript.messages[1].content] == [
        "TextBlock",
        "ThinkingBlock",
        "ToolUseBlock",
    ]
    assert not any("thinking" in n for n in transcript.notes)


def test_equal_blocks_streamed_in_one_reply_are_both_kept(tmp_path: Path) -> None:
    log = Log().user("go").assistant(text("Checking."), tool_use("t1", "Bash", command="ls"))
    reply_id = log.entries[-1]["message"]["id"]
    log.results(("t1", "ok")).assistant(text("Checking."))
    log.entries[-1]["message"]["id"] = reply_id  # the reply's last block, after the result

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    assert_valid_conversation(transcript.messages)
    assert transcript.messages[1].content == (
        TextBlock("Checking."),
        ToolUseBlock("t1", "Bash", {"command": "ls"}),
        TextBlock("Checking."),
    )


def test_an_entry_written_twice_is_read_once_with_a_note(tmp_path: Path) -> None:
    log = Log().user("first prompt").assistant(text("answer one"))
    log.entries += [dict(e) for e in log.entries]

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    assert [m.text for m in transcript.messages] == ["first prompt", "answer one"]
    assert "2 entries written again (a uuid already read) skipped" in transcript.notes


@pytest.mark.parametrize("arguments", ["NaN", "-Infinity", '{"limit": Infinity}'])
def test_openai_arguments_with_nan_or_infinity_are_kept_as_text(
    tmp_path: Path, arguments: str
) -> None:
    path = write_lines(
        tmp_path / "chat.jsonl",
        [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [openai_call("c1", "f", arguments)],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
            {"role": "assistant", "content": "ok"},
        ],
    )

    transcript = load_transcript(path)

    assert transcript.messages[1].content == (ToolUseBlock("c1", "f", {"arguments": arguments}),)
    assert any("the arguments of call c1 are not JSON" in n for n in transcript.notes)


def _jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _users_in_a_row(n: int) -> str:
    return _jsonl(
        [{"role": "user", "content": f"u{i}"} for i in range(n)]
        + [{"role": "assistant", "content": "done"}]
    )


def _one_call_id_reused(n: int) -> str:
    turn: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": [openai_call("call_0")]},
        {"role": "tool", "tool_call_id": "call_0", "content": "r"},
    ]
    return _jsonl([{"role": "user", "content": "go"}, *turn * n])


def _one_reply_streamed_in_many_entries(n: int) -> str:
    log = Log().user("go")
    for i in range(n):
        log.assistant(tool_use(f"t{i}", "Bash", command="ls"))
        log.entries[-1]["message"]["id"] = "msg_one"
        log.results((f"t{i}", "ok"))
    return _jsonl(log.assistant(text("done")).entries)


def _calls_streamed_around_a_result(n: int) -> str:
    """One reply's `n` calls, one a record, the first call's result written after the
    second: every later record goes on the reply (`recorded.regrouped`)."""
    calls = [
        {"role": "assistant", "content": None, "tool_calls": [openai_call(f"c{i}")]}
        for i in range(n)
    ]
    results = [{"role": "tool", "tool_call_id": f"c{i}", "content": "r"} for i in range(1, n)]
    first = {"role": "tool", "tool_call_id": "c0", "content": "r"}
    done = {"role": "assistant", "content": "done"}
    return _jsonl(
        [{"role": "user", "content": "go"}, *calls[:2], first, *calls[2:], *results, done]
    )


READERS = {
    "user lines in a row": (
        lambda text: parse_transcript(text.splitlines()),
        _users_in_a_row,
        400,
    ),
    "one call id reused": (
        lambda text: import_openai(read_records(text)),
        _one_call_id_reused,
        400,
    ),
    # From 2,000 entries: at 400 the linear work hid a look-up of each result in the list
    # of calls (a growth of 16 where the quadratic term shows 53 from 2,000).
    "calls streamed around a result": (
        lambda text: import_openai(read_records(text)),
        _calls_streamed_around_a_result,
        400,
    ),
    "one reply streamed": (
        lambda text: import_claude_code(read_records(text)),
        _one_reply_streamed_in_many_entries,
        2_000,
    ),
}


@pytest.mark.parametrize(("read", "make", "small"), READERS.values(), ids=READERS.keys())
def test_a_record_is_read_in_time_linear_in_its_length(
    read: Callable[[str], object], make: Callable[[int], str], small: int
) -> None:
    assert growth(read, make, small) < LINEAR


def test_a_claude_code_log_that_starts_with_many_snapshots_is_still_detected(
    tmp_path: Path,
) -> None:
    snapshot = {
        "type": "file-history-snapshot",
        "messageId": "x",
        "snapshot": {"messageId": "x", "trackedFileBackups": {}},
        "isSnapshotUpdate": False,
    }
    log = Log().user("hello").assistant(text("hi"))
    log.entries[:0] = [snapshot] * 60

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    assert [m.text for m in transcript.messages] == ["hello", "hi"]
    assert transcript.line_numbers == (61, 62)


def test_a_rewound_claude_code_log_keeps_the_branch_it_went_on_with(tmp_path: Path) -> None:
    log = Log().user("first prompt").assistant(text("answer one"))
    first_answer = log.entries[-1]["uuid"]
    log.user("second prompt").assistant(text("answer two"))
    log.entries.append({**log.entries[2], "uuid": "edited", "parentUuid": first_answer})
    log.entries[-1]["message"] = {"role": "user", "content": "edited second prompt"}
    log.entries.append({**log.entries[3], "uuid": "reply", "parentUuid": "edited"})
    log.entries[-1]["message"] = {**log.entries[3]["message"], "id": "m9"}
    log.entries[-1]["message"]["content"] = [text("answer to the edit")]

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    assert [m.text for m in transcript.messages] == [
        "first prompt",
        "answer one",
        "edited second prompt",
        "answer to the edit",
    ]
    assert transcript.line_numbers == (1, 2, 5, 6)
    assert any("the branch it left, lines 3-4 (2 entries)" in n for n in transcript.notes)


def test_an_edited_first_prompt_starts_the_conversation_again(tmp_path: Path) -> None:
    log = Log().user("first prompt").assistant(text("answer one"))
    log.entries.append({**log.entries[0], "uuid": "edited", "parentUuid": None})
    log.entries[-1]["message"] = {"role": "user", "content": "edited prompt"}
    log.entries.append({**log.entries[1], "uuid": "reply", "parentUuid": "edited"})
    log.entries[-1]["message"] = {**log.entries[1]["message"], "id": "m9"}
    log.entries[-1]["message"]["content"] = [text("answer to the edit")]

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    assert [m.text for m in transcript.messages] == ["edited prompt", "answer to the edit"]
    assert any("lines 1-2 (2 entries), is left out" in n for n in transcript.notes)


ODD_VALUES: list[Any] = [{"a": 1}, ["user"], None, 7]


@pytest.mark.parametrize("odd", ODD_VALUES, ids=["object", "list", "null", "number"])
@pytest.mark.parametrize(
    "records",
    [
        # An OpenAI-shaped file whose role, or a part's type, is not a name.
        lambda odd: [{"role": odd, "content": "hi"}, {"role": "assistant", "content": "hello"}],
        lambda odd: [
            {"role": "user", "content": [{"type": odd, "text": "hi"}]},
            {"role": "assistant", "content": "hello"},
        ],
        # A Claude Code log whose entry type is not a name.
        lambda odd: [
            {"type": odd, "uuid": "u0", "sessionId": "s"},
            *Log().user("go").assistant(text("ok")).entries,
        ],
        # A Responses / LangChain-looking record.
        lambda odd: [{"type": odd, "payload": {}}, {"role": "user", "content": "hi"}],
    ],
    ids=["openai-role", "openai-part", "claude-code-type", "foreign-type"],
)
def test_a_name_field_holding_another_json_value_is_a_transcript_error_or_read(
    tmp_path: Path, records: Callable[[Any], list[Any]], odd: Any
) -> None:
    """A field that names a role or a type, holding an object or a list: before, the format
    check looked it up in a set and raised `TypeError` (unhashable)."""
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records(odd)), encoding="utf-8")
    try:
        transcript = load_transcript(path)
    except TranscriptError:
        return
    assert_valid_conversation(transcript.messages)


def test_a_tool_results_null_error_flag_is_read_as_unset_with_a_note(tmp_path: Path) -> None:
    log = Log().user("list the files").assistant(tool_use("toolu_01", "Bash", command="ls"))
    log.user(
        [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "a.txt", "is_error": None}]
    ).assistant(text("One file: a.txt"))
    body = tmp_path / "request.jsonl"
    body.write_text(
        json.dumps(
            {
                "model": "claude-sonnet-4-5",
                "max_tokens": 1024,
                "messages": [
                    {"role": "user", "content": "list the files"},
                    {"role": "assistant", "content": [tool_use("toolu_01", "Bash", command="ls")]},
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "toolu_01",
                                "content": "a.txt",
                                "is_error": None,
                            },
                            {"type": "text", "text": "and then?"},
                        ],
                    },
                ],
            }
        )
        + "\n",
        encoding="utf-8",
    )

    for path in (log.write(tmp_path / "session.jsonl"), body):
        transcript = load_transcript(path)

        assert_valid_conversation(transcript.messages)
        result = transcript.messages[2].content[0]
        assert result == ToolResultBlock("toolu_01", "a.txt", False)
        assert "is_error" not in result.to_wire()
        assert "1 tool results' `is_error: null` read as not an error" in transcript.notes


def test_a_tool_results_error_flag_of_another_type_is_still_refused(tmp_path: Path) -> None:
    log = Log().user("list the files").assistant(tool_use("toolu_01", "Bash", command="ls"))
    log.user(
        [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "a.txt", "is_error": "no"}]
    ).assistant(text("One file: a.txt"))

    with pytest.raises(TranscriptError, match="'is_error' must be true or false"):
        load_transcript(log.write(tmp_path / "session.jsonl"))
