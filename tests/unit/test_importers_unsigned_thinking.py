"""Thinking a model of another maker wrote, behind a Messages-API-compatible endpoint, with
no signature (bastion claude-session.jsonl: GLM 4.7 in Claude Code, `"signature": ""`).
The API takes thinking back only with the signature a Claude model gave it: such blocks are
left out at import, with one note, rather than every replay of the log refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from abridged.adapters.transcripts import Transcript, check_conversation, load_transcript
from tests.unit.test_importers_outside import load_export
from tests.unit.test_importers_real_shapes import RealLog, blocks_of, call, text, wires


def unsigned(value: str, **signature: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, **signature}


def glm_block(log: RealLog, message_id: str, block: dict[str, Any]) -> str:
    """One streamed block of a reply of GLM 4.7, as Claude Code logs it."""
    message = {
        "model": "glm-4.7",
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "content": [block],
    }
    return log.add("assistant", message=message)


def assert_replayable(transcript: Transcript) -> None:
    check_conversation(transcript)
    assert blocks_of(transcript, "thinking") == []


@pytest.mark.parametrize("signature", [{"signature": ""}, {}], ids=["empty", "none"])
def test_unsigned_thinking_in_a_claude_code_log_is_left_out_with_a_note(
    tmp_path: Path, signature: dict[str, str]
) -> None:
    log = RealLog()
    log.user("list the files")
    glm_block(log, "msg_1", unsigned("I should run ls.", **signature))
    calling = glm_block(log, "msg_1", call("call_1", "ls"))
    log.result("call_1", "a.txt", parent=calling)
    glm_block(log, "msg_2", text("One file: a.txt"))

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    assert_replayable(transcript)
    assert wires(transcript)[1]["content"] == [call("call_1", "ls")]
    assert transcript.notes == (
        "1 thinking blocks without a signature left out (the record names model glm-4.7): "
        "the API takes thinking back only with the signature a Claude model gave it",
    )


def test_a_reply_of_only_unsigned_thinking_leaves_a_valid_conversation(tmp_path: Path) -> None:
    # The reply is left with no block: the prompts either side of it are one user turn.
    log = RealLog()
    log.user("what is in a.txt?")
    glm_block(log, "msg_1", unsigned("Maybe I should look.", signature=""))
    log.user("never mind, list the files")
    glm_block(log, "msg_2", text("a.txt"))

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    assert_replayable(transcript)
    messages = wires(transcript)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert [b["text"] for b in messages[0]["content"]] == [
        "what is in a.txt?",
        "never mind, list the files",
    ]


def test_signed_thinking_is_kept_beside_unsigned_thinking(tmp_path: Path) -> None:
    signed = {"type": "thinking", "thinking": "Claude's.", "signature": "EsMCCkYICxgCKkDu=="}
    body = {
        "model": "glm-4.7",
        "messages": [
            {"role": "user", "content": "Hi."},
            {"role": "assistant", "content": [unsigned("GLM's.", signature=""), text("Hello.")]},
            {"role": "user", "content": "And now?"},
            {"role": "assistant", "content": [signed, text("Still here.")]},
        ],
    }
    path = tmp_path / "request.json"
    path.write_text(json.dumps(body), encoding="utf-8")

    transcript = load_transcript(path)

    check_conversation(transcript)
    assert blocks_of(transcript, "thinking") == [signed]
    assert wires(transcript)[1]["content"] == [text("Hello.")]
    assert any("1 thinking blocks without a signature" in n for n in transcript.notes)


def test_a_list_of_messages_naming_no_model_says_so(tmp_path: Path) -> None:
    transcript = load_export(
        tmp_path,
        [
            {"role": "user", "content": "Hi."},
            {"role": "assistant", "content": [unsigned("Hm."), text("Hello.")]},
        ],
    )

    assert_replayable(transcript)
    assert "(the record names no model)" in transcript.notes[0]


def test_an_openai_export_never_carries_thinking_over(tmp_path: Path) -> None:
    # OpenAI chat has no thinking block: such a part is skipped with a note, as any part of
    # a kind the Messages API has no block for from an OpenAI message.
    reply = {
        "role": "assistant",
        "content": [unsigned("Hm.", signature=""), {"type": "text", "text": "Hello."}],
        "tool_calls": [],
    }
    transcript = load_export(tmp_path, [{"role": "user", "content": "Hi."}, reply])

    assert_replayable(transcript)
    assert wires(transcript)[1]["content"] == [text("Hello.")]
    assert "messages[1]: a content part of type 'thinking' was skipped" in transcript.notes
