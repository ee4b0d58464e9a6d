"""Whatever order a record writes its calls, results and texts in (calls streamed around
results, results lost, written twice, written as Cline's text, ids used again, blank texts,
several messages of one role in a row), an import is a conversation a session takes: every
call answered by exactly one result in the message after it, and every result a call's. A
Claude Code log that writes a result before the entry of its call (its `parentUuid` naming
that entry) is read as the log written in order."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.adapters.claude_code import import_claude_code
from abridged.adapters.importers import FormatError, import_anthropic
from abridged.adapters.openai_chat import import_openai
from abridged.domain.inputs import first_invalid
from abridged.domain.messages import Message, ToolResultBlock, ToolUseBlock

IDS = st.sampled_from(["t1", "t2", "t3", "t4"])
NAMES = st.sampled_from(["read_file", "Bash", "use_subagents"])


@st.composite
def anthropic_records(draw: st.DrawFn) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = [{"role": "user", "content": "Start."}]
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["calls", "result", "written", "text", "reply", "blank"]))
        if kind == "calls":
            calls = [
                {"type": "tool_use", "id": i, "name": draw(NAMES), "input": {}}
                for i in dict.fromkeys(draw(st.lists(IDS, min_size=1, max_size=3)))
            ]
            records.append({"role": "assistant", "content": calls})
        elif kind == "result":
            result = {"type": "tool_result", "tool_use_id": draw(IDS), "content": "out"}
            records.append({"role": "user", "content": [result]})
        elif kind == "written":
            texts = [
                {
                    "type": "text",
                    "text": f"[{draw(NAMES)} for 'a.ts'] Result:\n{draw(st.text(max_size=8))}",
                }
                for _ in range(draw(st.integers(1, 3)))
            ]
            records.append({"role": "user", "content": texts})
        elif kind == "text":
            records.append({"role": "user", "content": draw(st.text(min_size=1, max_size=12))})
        elif kind == "reply":
            records.append({"role": "assistant", "content": draw(st.text(min_size=1, max_size=12))})
        else:
            records.append(
                {"role": draw(st.sampled_from(["user", "assistant"])), "content": "\n\n"}
            )
    return records


def openai_of(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same records as OpenAI chat messages: calls as `tool_calls`, results as `tool`."""
    messages: list[dict[str, Any]] = []
    for record in records:
        content = record["content"]
        if isinstance(content, str) or (record["role"] == "user" and content[0]["type"] == "text"):
            messages.append(record)
        elif record["role"] == "assistant":
            calls = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": "{}"},
                }
                for c in content
            ]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        else:
            messages += [
                {"role": "tool", "tool_call_id": r["tool_use_id"], "content": r["content"]}
                for r in content
            ]
    return messages


def claude_code_of(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same records as a Claude Code log's entries, each chained to the one before."""
    entries: list[dict[str, Any]] = []
    for index, record in enumerate(records):
        message = {"role": record["role"], "content": record["content"]}
        if record["role"] == "assistant":
            message |= {"model": "claude-opus-4-6", "id": f"msg_{index}"}
        entries.append(
            {
                "type": record["role"],
                "uuid": f"u{index}",
                "parentUuid": f"u{index - 1}" if index else None,
                "sessionId": "s",
                "message": message,
            }
        )
    return entries


def results_after_their_call(records: list[dict[str, Any]]) -> list[int]:
    """The indexes of records of a result to a call of the record right before it."""
    return [
        index
        for index, (before, record) in enumerate(itertools.pairwise(records), start=1)
        if record["role"] == "user"
        and isinstance(record["content"], list)
        and record["content"][0]["type"] == "tool_result"
        and isinstance(before["content"], list)
        and record["content"][0]["tool_use_id"] in [c.get("id") for c in before["content"]]
    ]


def assert_valid(messages: tuple[Message, ...]) -> None:
    assert first_invalid(messages) is None
    for before, after in itertools.pairwise(messages):
        calls = [b.id for b in before.content if isinstance(b, ToolUseBlock)]
        results = [b.tool_use_id for b in after.content if isinstance(b, ToolResultBlock)]
        assert results == calls


def imported(read: Any, messages: list[dict[str, Any]], first_line: int = 0) -> tuple[Message, ...]:
    """The messages `read` imports, or none for a record with no prompt to start at (the
    one refusal such records may meet); each on a line of its own from `first_line` (else
    all in one document)."""
    lines = itertools.count(first_line) if first_line else itertools.repeat(0)
    try:
        return tuple(read(list(zip(lines, messages, strict=False))).messages)
    except FormatError as error:
        if "holds no conversation" not in str(error):
            raise
        return ()


@settings(max_examples=300)
@given(anthropic_records())
def test_an_anthropic_records_import_is_a_valid_conversation(records: list[dict[str, Any]]) -> None:
    assert_valid(imported(import_anthropic, records))


@settings(max_examples=300)
@given(anthropic_records())
def test_an_openai_records_import_is_a_valid_conversation(records: list[dict[str, Any]]) -> None:
    assert_valid(imported(import_openai, openai_of(records)))


@settings(max_examples=200)
@given(anthropic_records(), st.data())
def test_a_claude_code_log_writing_a_result_before_its_call_reads_as_in_order(
    records: list[dict[str, Any]], data: st.DataObject
) -> None:
    in_order = claude_code_of(records)
    written = list(in_order)
    early = results_after_their_call(records)
    if early:
        index = data.draw(st.sampled_from(early))
        written[index - 1], written[index] = written[index], written[index - 1]

    messages = imported(import_claude_code, written, first_line=1)

    assert messages == imported(import_claude_code, in_order, first_line=1)
    assert_valid(messages)
