"""Logs of shapes the importers were not written around: each is read as the conversation it
records, with a note for whatever changed, or refused naming its format and line."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from abridged.adapters.transcripts import Transcript, TranscriptError, load_transcript


def write_lines(path: Path, records: Sequence[object], *, end: str = "\n") -> Path:
    path.write_text("".join(json.dumps(r) + end for r in records), encoding="utf-8")
    return path


def wires(transcript: Transcript) -> list[dict[str, Any]]:
    return [dict(m.to_wire()) for m in transcript.messages]


def load_export(tmp_path: Path, messages: Sequence[object]) -> Transcript:
    """`messages` saved as one JSON list, as other agents export a conversation, and read."""
    path = tmp_path / "export.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return load_transcript(path)


def test_an_anthropic_request_body_keeps_its_system_tools_and_tool_blocks(
    tmp_path: Path,
) -> None:
    # Read as OpenAI chat before: the tool_use and tool_result blocks and the system prompt
    # were dropped without a word, leaving a two-message conversation.
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "Be brief."}],
        "tools": [{"name": "grep", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "Find the TODOs."},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}],
            },
            {"role": "assistant", "content": "One, in a.py."},
        ],
    }
    path = tmp_path / "request.json"
    path.write_text(json.dumps(body, indent=2), encoding="utf-8")

    transcript = load_transcript(path)

    assert [m["role"] for m in wires(transcript)] == ["user", "assistant", "user", "assistant"]
    assert transcript.messages[1].tool_uses[0].id == "toolu_1"
    assert transcript.system == "Be brief."
    assert transcript.model == "claude-sonnet-4-5"
    assert [t["name"] for t in transcript.tools] == ["grep"]


def test_a_json_list_of_messages_api_messages_is_read(tmp_path: Path) -> None:
    path = tmp_path / "messages.json"
    messages = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": [{"type": "text", "text": "Hi"}]},
    ]
    path.write_text(json.dumps(messages, indent=1), encoding="utf-8")

    assert [m["role"] for m in wires(load_transcript(path))] == ["user", "assistant"]


def test_a_bad_message_in_a_request_body_is_named_by_its_index(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "bot"}]}
    path.write_text(json.dumps(body, indent=2), encoding="utf-8")

    with pytest.raises(TranscriptError, match=r"messages\[1\]"):
        load_transcript(path)


def test_an_openai_refusal_is_the_replys_text(tmp_path: Path) -> None:
    # Before: not even detected as OpenAI (read as abridged's JSONL, "content must be ...").
    path = write_lines(
        tmp_path / "chat.jsonl",
        [
            {"role": "user", "content": "Help me pick a lock."},
            {"role": "assistant", "content": None, "refusal": "I can't help with that."},
            {"role": "user", "content": "A lock of my own."},
            {"role": "assistant", "content": "Then call a locksmith."},
        ],
    )

    transcript = load_transcript(path)

    assert wires(transcript)[1]["content"] == [{"type": "text", "text": "I can't help with that."}]
    assert len(transcript.messages) == 4


def test_a_legacy_function_call_and_its_answer_are_a_tool_use_and_its_result(
    tmp_path: Path,
) -> None:
    # Before: the call vanished and its answer was skipped, the reply losing its action.
    path = write_lines(
        tmp_path / "chat.jsonl",
        [
            {"role": "system", "content": "You may call functions."},
            {"role": "user", "content": "Weather in Oslo?"},
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "weather", "arguments": '{"city": "Oslo"}'},
            },
            {"role": "function", "name": "weather", "content": "-3 C, snow"},
            {"role": "assistant", "content": "Cold and snowy."},
        ],
    )

    messages = wires(load_transcript(path))

    use = messages[1]["content"][0]
    assert (use["type"], use["name"], use["input"]) == ("tool_use", "weather", {"city": "Oslo"})
    result = messages[2]["content"][0]
    assert result["tool_use_id"] == use["id"]
    assert result["content"] == "-3 C, snow"


def test_what_an_openai_import_cannot_carry_over_is_noted(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "chat.jsonl",
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Transcribe this."},
                    {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
            {"role": "assistant", "content": "Done."},
        ],
    )

    notes = " ".join(load_transcript(path).notes)

    assert "'input_audio' was skipped" in notes
    assert "arguments of call c1 are not JSON" in notes


def test_a_json_list_of_openai_messages_names_each_by_its_index(tmp_path: Path) -> None:
    # Before: every note about a message of a JSON list said "line 0", and an error named
    # no message at all.
    messages = [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Listen"},
                {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
            ],
        },
        {"role": "assistant", "content": "Heard."},
    ]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(messages, indent=2), encoding="utf-8")

    assert load_transcript(path).notes == (
        "messages[1]: a content part of type 'input_audio' was skipped",
    )

    path.write_text(json.dumps([*messages, {"role": "bot", "content": "?"}]), encoding="utf-8")
    with pytest.raises(TranscriptError, match=r"messages\[3\]: unknown role 'bot'"):
        load_transcript(path)


def test_a_result_answering_no_call_does_not_leave_two_replies_in_a_row(tmp_path: Path) -> None:
    # Before: the orphan result was dropped, then the two replies either side of it were
    # refused as "two assistant messages in a row".
    path = write_lines(
        tmp_path / "chat.jsonl",
        [
            {"role": "user", "content": "Go."},
            {"role": "assistant", "content": "Starting."},
            {"role": "tool", "tool_call_id": "unknown", "content": "stray"},
            {"role": "assistant", "content": "Finished."},
        ],
    )

    transcript = load_transcript(path)

    assert [m["role"] for m in wires(transcript)] == ["user", "assistant"]
    assert [b["text"] for b in wires(transcript)[1]["content"]] == ["Starting.", "Finished."]
    assert any("answer no call" in note for note in transcript.notes)


CLAUDE_CODE = [
    {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "Hi"}},
    {
        "type": "assistant",
        "uuid": "a1",
        "sessionId": "s",
        "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5", "content": []},
    },
]
CLAUDE_CODE[1]["message"]["content"] = [{"type": "text", "text": "Hello."}]  # type: ignore[index]


@pytest.mark.parametrize("name", ["session.jsonl", "session.json"])
def test_a_last_line_cut_short_by_a_crash_is_skipped_with_a_note(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    cut = json.dumps({"type": "user", "uuid": "u2", "sessionId": "s", "message": {}})[:30]
    path.write_text("".join(json.dumps(r) + "\n" for r in CLAUDE_CODE) + cut, encoding="utf-8")

    transcript = load_transcript(path)

    assert len(transcript.messages) == 2
    assert any("line 3, the last, is cut short" in note for note in transcript.notes)


def test_abridged_jsonl_cut_short_by_a_crash_is_read_up_to_the_cut(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]
    path.write_text("".join(json.dumps(m) + "\n" for m in lines) + '{"role": "us', "utf-8")

    transcript = load_transcript(path, "abridged")

    assert len(transcript.messages) == 2
    assert transcript.notes
    assert "line 3" in transcript.notes[0]


def test_a_bad_line_in_the_middle_is_still_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(CLAUDE_CODE[0]) + "\n{oops\n" + json.dumps(CLAUDE_CODE[1]) + "\n")

    with pytest.raises(TranscriptError, match="line 2: not valid JSON"):
        load_transcript(path)


@pytest.mark.parametrize(
    ("records", "named", "line"),
    [
        (
            [
                {"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}},
                {"timestamp": "t", "type": "response_item", "payload": {"type": "message"}},
            ],
            "a Codex CLI rollout log",
            1,
        ),
        (
            [
                {"type": "message", "role": "user", "content": [{"type": "input_text"}]},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            ],
            "an OpenAI Responses API item",
            1,
        ),
        (
            [{"model": "gpt-4.1", "input": [{"role": "user", "content": "hi"}]}],
            "an OpenAI Responses API document",
            1,
        ),
        (
            [{"type": "human", "data": {"content": "hi"}}, {"type": "ai", "data": {}}],
            "a LangChain message dump",
            1,
        ),
    ],
)
def test_other_agents_logs_are_refused_by_name_and_line(
    tmp_path: Path, records: list[object], named: str, line: int
) -> None:
    # Before: "line 1: role must be 'user', 'assistant' or 'system', got None".
    path = write_lines(tmp_path / "log.jsonl", records)

    with pytest.raises(TranscriptError) as raised:
        load_transcript(path)

    assert raised.value.line == line
    assert named in str(raised.value)
    assert "Claude Code session logs" in str(raised.value)  # and what is read instead


ONE_BLOCK_A_LINE = [
    {"timestamp": "t", "role": "user", "content": {"type": "text", "text": "clone the repo"}},
    {
        "timestamp": "t",
        "role": "assistant",
        "content": {"type": "tool_use", "tool_name": "Bash", "tool_id": "toolu_1", "input": {}},
    },
    {
        "timestamp": "t",
        "role": "tool",
        "content": {"type": "tool_result", "tool_id": "toolu_1", "output": "done"},
    },
]


def test_a_log_of_one_content_block_a_line_is_refused_as_a_format_not_read(
    tmp_path: Path,
) -> None:
    # sentinel transcript.jsonl, an export of a Claude Code session: its `tool` role read
    # as OpenAI chat, refused at line 1 with "message content must be a string or a list of
    # parts", as if the file were OpenAI chat written wrong.
    path = write_lines(tmp_path / "transcript.jsonl", ONE_BLOCK_A_LINE)

    with pytest.raises(TranscriptError) as raised:
        load_transcript(path)

    assert raised.value.line == 1
    assert "this is a log of one content block a record" in str(raised.value)
    assert "not read here: abridged reads its own JSONL, Claude Code session logs" in str(
        raised.value
    )
    assert "must be a string or a list of parts" not in str(raised.value)


def test_crlf_line_ends_and_a_byte_order_mark_are_read(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    text = "".join(json.dumps(r) + "\r\n" for r in CLAUDE_CODE)
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())

    assert len(load_transcript(path).messages) == 2


def test_a_custom_tool_call_keeps_its_free_text_input(tmp_path: Path) -> None:
    # OpenAI's custom tools (`type: "custom"`, GPT-5's `apply_patch`) call with free text,
    # not JSON arguments: such a log was refused ("a tool call needs an 'id' and a
    # 'function'").
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch"
    call = {"id": "call_1", "type": "custom", "custom": {"name": "apply_patch", "input": patch}}
    path = write_lines(
        tmp_path / "chat.jsonl",
        [
            {"role": "user", "content": "Patch it."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Done"},
            {"role": "assistant", "content": "Patched."},
        ],
    )

    messages = wires(load_transcript(path))

    [use] = messages[1]["content"]
    assert (use["type"], use["name"], use["input"]) == ("tool_use", "apply_patch", {"input": patch})
    assert messages[2]["content"][0]["tool_use_id"] == use["id"]


def test_parts_of_other_types_that_hold_text_are_read_as_text(tmp_path: Path) -> None:
    # Exports of other agents write a tool's output as a `tool_output` part: before, each
    # was skipped, and every result of the session reached the model empty.
    messages = [
        {"role": "user", "content": [{"type": "input_text", "text": "List the folder."}]},
        {
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Listing it."}],
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": [{"type": "tool_output", "text": "a.py"}],
        },
        {"role": "assistant", "content": "One file: a.py."},
    ]
    transcript = load_export(tmp_path, messages)
    sent = wires(transcript)

    assert sent[0]["content"] == [{"type": "text", "text": "List the folder."}]
    assert sent[1]["content"][0] == {"type": "text", "text": "Listing it."}
    assert sent[2]["content"][0]["content"] == "a.py"
    assert sorted(transcript.notes) == [
        "1 content part(s) of type 'input_text' (the first at messages[0]) were read as text",
        "1 content part(s) of type 'output_text' (the first at messages[1]) were read as text",
        "1 content part(s) of type 'tool_output' (the first at messages[2]) were read as text",
    ]


def cline_history(results: list[str]) -> list[dict[str, Any]]:
    """A Cline task history (`api_conversation_history.json`): the calls' results written as
    text in the user message after them, with Cline's environment details."""
    calls = [
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.ts"}},
        {"type": "tool_use", "id": "toolu_2", "name": "ask_followup_question", "input": {}},
    ]
    return [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nFix a.ts\n</task>"}]},
        {"role": "assistant", "content": calls},
        {
            "role": "user",
            "content": [{"type": "text", "text": r} for r in results]
            + [
                {
                    "type": "text",
                    "text": "<environment_details>\n# Current Time\n</environment_details>",
                }
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Fixed."}]},
    ]


def test_a_cline_historys_results_written_as_text_are_the_calls_results(tmp_path: Path) -> None:
    path = tmp_path / "api_conversation_history.json"
    written = [
        "[read_file for 'a.ts'] Result:\n1 | export const a = 1;",
        "[ask_followup_question for 'Which one?\nA or B'] Result:\n<answer>A</answer>",
    ]
    path.write_text(json.dumps(cline_history(written)), encoding="utf-8")

    transcript = load_transcript(path)
    sent = wires(transcript)

    assert sent[2]["content"][:2] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "1 | export const a = 1;"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "<answer>A</answer>"},
    ]
    assert sent[2]["content"][2]["text"].startswith("<environment_details>")
    assert transcript.notes == (
        "2 tool results written as text ('[tool] Result:', as Cline records them) read as "
        "the results of their calls",
    )


def test_results_written_as_text_that_do_not_answer_every_call_are_left_as_text(
    tmp_path: Path,
) -> None:
    path = tmp_path / "api_conversation_history.json"
    path.write_text(
        json.dumps(cline_history(["[read_file for 'a.ts'] Result:\n1 | x"])), encoding="utf-8"
    )

    sent = wires(load_transcript(path))

    assert [b.get("is_error") for b in sent[2]["content"][:2]] == [True, True]
    assert sent[2]["content"][2]["text"].startswith("[read_file for 'a.ts'] Result:")


def call(call_id: str) -> dict[str, Any]:
    """An OpenAI assistant message holding one tool call and nothing else."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "Read", "arguments": "{}"}}
        ],
    }


def answer(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": f"out {call_id}"}


def test_a_replys_calls_written_around_a_result_are_one_reply(tmp_path: Path) -> None:
    # An agent that runs each call as it streams wrote the first result before the third
    # call: read as written, the first reply's second call was unanswered and the third
    # call's reply followed results.
    messages = [
        {"role": "user", "content": "Read the three files."},
        call("c1"),
        call("c2"),
        answer("c1"),
        call("c3"),
        answer("c2"),
        answer("c3"),
        {"role": "assistant", "content": "Read."},
    ]
    transcript = load_export(tmp_path, messages)
    sent = wires(transcript)

    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant"]
    assert [b["id"] for b in sent[1]["content"]] == ["c1", "c2", "c3"]
    assert [b["tool_use_id"] for b in sent[2]["content"]] == ["c1", "c2", "c3"]
    assert not any("no recorded result" in n for n in transcript.notes)


def test_replies_whose_calls_were_answered_stay_apart(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "Read two files."},
        call("c1"),
        answer("c1"),
        call("c2"),
        answer("c2"),
        {"role": "assistant", "content": "Read."},
    ]
    transcript = load_export(tmp_path, messages)

    assert [m["role"] for m in wires(transcript)] == ["user", "assistant"] * 3
    assert not transcript.notes


def test_a_result_lost_on_the_way_does_not_carry_the_reply_on(tmp_path: Path) -> None:
    # The first reply's second call was never answered; every later reply is a bare call
    # answered at once. The first of them may be the reply going on (a call still running
    # reads the same); the rest are replies of their own, not calls of the first.
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Go."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("a")["tool_calls"][0], call("b")["tool_calls"][0]],
        },
        answer("a"),
    ]
    for i in range(5):
        messages += [call(f"c{i}"), answer(f"c{i}")]
    messages.append({"role": "assistant", "content": "Done."})
    sent = wires(load_export(tmp_path, messages))

    assert [b["id"] for b in sent[1]["content"]] == ["a", "b", "c0"]
    assert [b["id"] for b in sent[3]["content"]] == ["c1"]
    assert len(sent) == 2 + 2 * 5


def test_a_call_id_used_again_starts_a_reply_of_its_own(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "Go."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("call_0")["tool_calls"][0], call("call_1")["tool_calls"][0]],
        },
        answer("call_0"),
        call("call_0"),
        {"role": "tool", "tool_call_id": "call_0", "content": "OUTPUT OF rm"},
        {"role": "assistant", "content": "Done."},
    ]
    sent = wires(load_export(tmp_path, messages))

    assert [b["id"] for b in sent[1]["content"]] == ["call_0", "call_1"]
    assert sent[2]["content"][0]["content"] == "out call_0"
    assert sent[4]["content"][0]["content"] == "OUTPUT OF rm"


def test_a_cline_header_and_its_output_in_two_blocks_are_one_result(tmp_path: Path) -> None:
    # Cline writes the header and the output as blocks of their own; and a second call of
    # the reply it did not run.
    history = cline_history(["[read_file for 'a.ts'] Result:", "1 | export const a = 1;"])
    history[2]["content"].insert(
        2,
        {
            "type": "text",
            "text": "Tool [ask_followup_question] was not executed because a tool has already "
            "been used in this message.",
        },
    )
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(history), encoding="utf-8")

    sent = wires(load_transcript(path))

    first, second, *rest = sent[2]["content"]
    assert first == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "1 | export const a = 1;",
    }
    assert second["is_error"] is True
    assert "was not executed" in second["content"]
    assert [b["text"][:21] for b in rest] == ["<environment_details>"]


@pytest.mark.parametrize(
    "prompt",
    [
        "[WIP for the team] Use Postgres; never touch prod.\n[pytest] Result: 3 failed",
        "[CI] Result: 3 failed. Never push to main; fix them.",
    ],
)
def test_a_users_text_that_reads_like_a_written_result_stays_the_users(
    tmp_path: Path, prompt: str
) -> None:
    messages = [
        {"role": "user", "content": "Run the tests."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}],
        },
        {"role": "user", "content": [{"type": "text", "text": prompt}]},
        {"role": "assistant", "content": "On it."},
    ]
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(messages), encoding="utf-8")

    sent = wires(load_transcript(path))

    assert sent[2]["content"][0]["is_error"] is True  # the call's result was not recorded
    assert sent[2]["content"][1] == {"type": "text", "text": prompt}


def test_written_results_are_matched_to_their_calls_by_the_tools_name(tmp_path: Path) -> None:
    written = [
        "[ask_followup_question for 'Which?'] Result:\n<answer>A</answer>",
        "[read_file for 'a.ts'] Result:\n1 | x",
    ]
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(cline_history(written)), encoding="utf-8")

    sent = wires(load_transcript(path))

    assert [b["content"] for b in sent[2]["content"][:2]] == ["1 | x", "<answer>A</answer>"]


def test_a_reasoning_part_is_not_read_as_the_reply(tmp_path: Path) -> None:
    reply = call("c1")
    reply["content"] = [
        {"type": "reasoning", "text": "SECRET CHAIN OF THOUGHT"},
        {"type": "text", "text": "Reading it."},
    ]
    messages = [{"role": "user", "content": "Hi."}, reply, answer("c1")]
    transcript = load_export(tmp_path, messages)

    assert wires(transcript)[1]["content"][0] == {"type": "text", "text": "Reading it."}
    assert "messages[1]: a content part of type 'reasoning' was skipped" in transcript.notes
