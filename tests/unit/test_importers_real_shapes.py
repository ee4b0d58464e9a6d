"""Claude Code log shapes seen in real recorded sessions, each cut down to a few entries.

The logs `tests/support/claude_code_logs.py` writes stream a reply's blocks back to back and
its results after them, chain every entry to the one before, and leave `isMeta` entries out.
Real logs (Claude Code 2.0.29 to 2.1.39) differ: a reply of parallel calls runs each call as
it streams, so its results are written between its blocks, each result chained to its own
call; `isMeta` user entries carry text the model was sent (a skill's expanded prompt, Stop-hook
feedback, a hook's `<system-reminder>`); a compaction writes a `compact_boundary` entry with no
parent and then the summary as a user entry; a sub-agent's own log is all `isSidechain`.

Each test reads one shape as the conversation the model saw.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from abridged.adapters.recorded import UNANSWERED
from abridged.adapters.transcripts import Transcript, TranscriptError, load_transcript

SESSION = "258c7280-0000-4000-8000-000000000000"


class RealLog:
    """Entries as a real Claude Code 2.1 log has them: each with its own `uuid` and the
    `parentUuid` of the entry it follows in the conversation, which is not always the line
    before it (a tool result's parent is its call's entry)."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self._uuids = itertools.count(1)
        self.last: str | None = None

    def add(self, kind: str, parent: str | None = None, **fields: Any) -> str:
        uuid = f"00000000-0000-4000-8000-{next(self._uuids):012d}"
        self.entries.append(
            {
                "parentUuid": self.last if parent is None else parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": "/home/dev/spotter",
                "sessionId": SESSION,
                "version": "2.1.39",
                "gitBranch": "main",
                "type": kind,
                **fields,
                "uuid": uuid,
                "timestamp": "2026-02-11T21:18:41.543Z",
            }
        )
        self.last = uuid
        return uuid

    def user(self, content: str | list[dict[str, Any]], **fields: Any) -> str:
        return self.add("user", message={"role": "user", "content": content}, **fields)

    def block(self, message_id: str, block: dict[str, Any], parent: str | None = None) -> str:
        """One streamed block of the reply `message_id`."""
        message = {
            "model": "claude-opus-4-6",
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": None,
            "usage": {"input_tokens": 3, "output_tokens": 9},
        }
        return self.add("assistant", parent, message=message, requestId="req_011CY")

    def result(self, call: str, content: str, parent: str) -> str:
        """A tool result, chained to the entry holding its call."""
        block = {"tool_use_id": call, "type": "tool_result", "content": content}
        return self.add(
            "user",
            parent,
            message={"role": "user", "content": [block]},
            toolUseResult={"stdout": content, "stderr": "", "interrupted": False},
        )

    def progress(self) -> str:
        return self.add("progress", data={"type": "hook_progress", "hookEvent": "PostToolUse"})

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(e) + "\n" for e in self.entries), encoding="utf-8")
        return path


def call(tool_id: str, command: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(value: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": "EsMCCkYICxgCKkDu=="}


def wires(transcript: Transcript) -> list[dict[str, Any]]:
    return [dict(m.to_wire()) for m in transcript.messages]


def blocks_of(transcript: Transcript, kind: str) -> list[dict[str, Any]]:
    return [b for w in wires(transcript) for b in w["content"] if b["type"] == kind]


def all_text(message: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in message["content"] if b["type"] == "text")


# Parallel calls streamed between their results (258c7280 lines 557-580, tool_heavy 34-38).


def parallel_calls_log() -> RealLog:
    """One reply of three calls; Claude Code runs each call as its block streams, so the
    first result is written before the third call's block."""
    log = RealLog()
    log.user("Run the three checks.")
    first = log.block("msg_01P5CVjokj5u", call("toolu_A", "mix test"))
    log.progress()
    second = log.block("msg_01P5CVjokj5u", call("toolu_B", "mix credo"))
    log.result("toolu_A", "65 tests, 0 failures", parent=first)
    third = log.block("msg_01P5CVjokj5u", call("toolu_C", "mix format --check-formatted"))
    log.progress()
    log.result("toolu_B", "no issues", parent=second)
    log.result("toolu_C", "formatted", parent=third)
    log.block("msg_01Q9nextreply", text("All three checks pass."))
    return log


def test_a_result_written_between_a_replys_calls_keeps_every_real_result(
    tmp_path: Path,
) -> None:
    transcript = load_transcript(parallel_calls_log().write(tmp_path / "s.jsonl"))

    results = {b["tool_use_id"]: b["content"] for b in blocks_of(transcript, "tool_result")}
    assert results == {
        "toolu_A": "65 tests, 0 failures",
        "toolu_B": "no issues",
        "toolu_C": "formatted",
    }
    assert UNANSWERED not in results.values()
    assert [w["role"] for w in wires(transcript)] == ["user", "assistant", "user", "assistant"]
    assert transcript.notes == ()


def test_a_reply_of_parallel_calls_is_one_assistant_message(tmp_path: Path) -> None:
    # spotter tool_heavy.jsonl lines 34-38: each call's result is written before the next
    # call's block, so every pair is valid and nothing is noted.
    log = RealLog()
    log.user("Why does scrolling back in xterm.js not work?")
    first = log.block("msg_01S5jdsym", call("toolu_ShAGoU", "rg wheel assets/"))
    log.progress()
    log.result("toolu_ShAGoU", "assets/js/terminal.js:12", parent=first)
    second = log.block("msg_01S5jdsym", call("toolu_XBnfV2", "cat assets/js/terminal.js"))
    log.result("toolu_XBnfV2", "term.onWheel(...)", parent=second)
    log.block("msg_01Tnext", text("The outer page captures the wheel events."))

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    replies = [w for w in wires(transcript) if w["role"] == "assistant"]
    assert [[b.get("id") for b in r["content"]] for r in replies] == [
        ["toolu_ShAGoU", "toolu_XBnfV2"],
        [None],
    ]


def test_results_written_after_all_of_a_replys_calls_pair_with_them(tmp_path: Path) -> None:
    # claude-reliability coverage-test-fix lines 6-9: both calls streamed, then both results.
    log = RealLog()
    log.user("Add multiply_numbers.")
    first = log.block("msg_01JZ86Ae", call("toolu_A", "ls src"))
    second = log.block("msg_01JZ86Ae", call("toolu_B", "cat src/math_utils.py"))
    log.result("toolu_A", "math_utils.py", parent=first)
    log.result("toolu_B", "def add(a, b): ...", parent=second)
    log.block("msg_01cAXFh7", text("I can see the structure."))

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    assert [w["role"] for w in wires(transcript)] == ["user", "assistant", "user", "assistant"]
    assert [b["tool_use_id"] for b in blocks_of(transcript, "tool_result")] == [
        "toolu_A",
        "toolu_B",
    ]
    assert transcript.notes == ()


# isMeta user entries: text the model was sent, hidden from the user's screen.


def test_a_skills_expanded_prompt_is_kept(tmp_path: Path) -> None:
    # spotter subagent.jsonl lines 4-6: the command line, then its 10,095-character prompt.
    log = RealLog()
    log.user(
        "<command-message>create-beads</command-message>\n<command-name>/create-beads"
        "</command-name>\n<command-args>set up credo</command-args>"
    )
    log.user(
        [text("Create beads (epic + tasks) with a structured preview. Do NOT write code.")],
        isMeta=True,
    )
    log.block("msg_01EieBJx", text("I'll research the setup options first."))

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    assert "Do NOT write code." in all_text(wires(transcript)[0])


def test_stop_hook_feedback_stands_between_the_two_replies(tmp_path: Path) -> None:
    # claude-reliability coverage-test-fix lines 15-17.
    log = RealLog()
    log.user("Add multiply_numbers.")
    log.block("msg_01ALCFv8", text("Done. I've added multiply_numbers."))
    log.user(
        "Stop hook feedback:\n[stop.sh]: Running quality checks: uncommitted changes", isMeta=True
    )
    log.block("msg_018zZXAh", text("I need to run quality checks and commit the change."))

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    assert [w["role"] for w in wires(transcript)] == ["user", "assistant", "user", "assistant"]
    assert "Stop hook feedback" in all_text(wires(transcript)[2])


def test_a_reply_before_stop_hook_feedback_is_kept_when_the_next_one_thinks(
    tmp_path: Path,
) -> None:
    log = RealLog()
    log.user("Add multiply_numbers.")
    log.block("msg_01ALCFv8", text("Done. I've added multiply_numbers."))
    log.user("Stop hook feedback:\n[stop.sh]: uncommitted changes", isMeta=True)
    log.block("msg_018zZXAh", thinking("The hook says the change is not committed."))
    log.block("msg_018zZXAh", text("Committing now."))

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    sent = "\n".join(all_text(w) for w in wires(transcript))
    assert "Done. I've added multiply_numbers." in sent


# Compaction: a boundary with no parent, then the summary as a user entry.


def test_a_compaction_summary_is_not_joined_to_the_results_before_it(tmp_path: Path) -> None:
    # spotter 258c7280 lines 1244-1264 (an automatic compaction at 167,094 tokens).
    log = RealLog()
    log.user("Fix the flash messages.")
    use = log.block("msg_016DTJ9p", call("toolu_D5BV9v", "cat lib/root.html.heex"))
    before = log.result("toolu_D5BV9v", "<main>...</main>", parent=use)
    boundary = log.add(
        "system",
        subtype="compact_boundary",
        content="Conversation compacted",
        isMeta=False,
        level="info",
        compactMetadata={"trigger": "auto", "preTokens": 167094},
        logicalParentUuid=before,
    )
    log.entries[-1]["parentUuid"] = None
    log.user(
        "This session is being continued from a previous conversation that ran out of "
        "context. Summary: the root layout renders no flash messages.",
        parent=boundary,
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
    )
    log.block("msg_01X9SQM5", text("Continuing with the flash messages."))

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    for wire in wires(transcript):
        kinds = {b["type"] for b in wire["content"]}
        assert not ("tool_result" in kinds and "being continued" in all_text(wire))


# Sub-agent logs: `<session>/subagents/agent-*.jsonl`, every entry a sidechain.


def test_a_sub_agents_log_is_read_or_refused_by_name(tmp_path: Path) -> None:
    # spotter 4d5611e5/subagents/agent-a2898e3.jsonl: 144 entries, all isSidechain.
    log = RealLog()
    log.user("Explore how transcripts are synced.", isSidechain=True, agentId="a2898e3")
    use = log.block("msg_01Sub", call("toolu_S", "rg sync lib/"))
    log.entries[-1]["isSidechain"] = True
    log.result("toolu_S", "lib/sync.ex", parent=use)
    log.entries[-1]["isSidechain"] = True
    log.block("msg_01Sub2", text("Syncing happens in lib/sync.ex."))
    log.entries[-1]["isSidechain"] = True

    path = log.write(tmp_path / "agent-a2898e3.jsonl")
    refusal = ""
    roles: list[str] = []
    try:
        roles = [w["role"] for w in wires(load_transcript(path))]
    except TranscriptError as error:
        refusal = str(error)
    if refusal:
        assert "sidechain" in refusal or "sub-agent" in refusal
    else:
        assert roles[:2] == ["user", "assistant"]


# Shapes that import as recorded.


def test_a_blank_text_block_before_thinking_leaves_the_thinking_first(tmp_path: Path) -> None:
    # spotter short.jsonl lines 4-8: "\n\n", then signed thinking, then text and a call.
    log = RealLog()
    log.user("mix phx.server doesnt seem to start")
    log.block("msg_01pYiiQa", text("\n\n"))
    log.block("msg_01pYiiQa", thinking("The user is having trouble starting Phoenix."))
    log.block("msg_01pYiiQa", text("Let me check the project."))
    use = log.block("msg_01pYiiQa", call("toolu_8qV1Sc", "mix phx.server"))
    log.result("toolu_8qV1Sc", "** (Mix) port 4000 in use", parent=use)
    log.user([text("[Request interrupted by user for tool use]")])

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    reply = wires(transcript)[1]
    assert [b["type"] for b in reply["content"]] == ["thinking", "text", "tool_use"]
    assert reply["content"][0]["signature"] == "EsMCCkYICxgCKkDu=="
    last = wires(transcript)[2]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]
    assert last[1]["text"] == "[Request interrupted by user for tool use]"


def test_bookkeeping_entries_of_a_real_log_are_skipped_without_a_note(tmp_path: Path) -> None:
    # file-history-snapshot, a queue operation that holds no prompt, progress and system
    # notices with no message (a local command's lines are not bookkeeping: see
    # test_importers_claude_code_text.py).
    log = RealLog()
    log.entries.append(
        {
            "type": "file-history-snapshot",
            "messageId": "m1",
            "snapshot": {},
            "isSnapshotUpdate": False,
        }
    )
    log.entries.append(
        {
            "type": "queue-operation",
            "operation": "dequeue",
            "timestamp": "2026-02-11T21:18:41.543Z",
            "sessionId": SESSION,
        }
    )
    log.progress()
    log.user("start phoenix in background")
    log.add("system", subtype="stop_hook_summary", level="suggestion", hookCount=1)
    log.add("system", subtype="turn_duration", durationMs=24576)
    log.block("msg_01K7hVSg", text("Started."))

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    assert [w["role"] for w in wires(transcript)] == ["user", "assistant"]
    assert transcript.notes == ()


# Where a log starts: a run of progress entries, or the middle of a turn.


def test_a_log_starting_with_a_run_of_progress_entries_is_read_as_claude_code(
    tmp_path: Path,
) -> None:
    log = RealLog()
    for _ in range(60):
        log.add(
            "progress",
            data={"type": "hook_progress", "hookEvent": "PreToolUse", "hookName": "PreToolUse"},
            toolUseID="toolu_01Vz",
            parentToolUseID="toolu_01Vz",
        )
    log.user("What is the exporter configured with?")
    log.block("msg_01CA3kyS", text("The OTLP exporter, configured in config/runtime.exs."))

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    assert [w["role"] for w in wires(transcript)] == ["user", "assistant"]


def test_a_log_starting_mid_turn_starts_at_its_first_user_prompt(tmp_path: Path) -> None:
    # spotter ae4a77f8 from line 349 on: a tool result whose call is before the cut.
    log = RealLog()
    log.result("toolu_01VzQ2", "config :opentelemetry, traces_exporter: :otlp", parent="x")
    log.block("msg_01CA3kyS", text("I see the issue - the configuration format."))
    use = log.block("msg_01CA3kyS", call("toolu_uyPiwa", "cat config/runtime.exs"))
    log.result("toolu_uyPiwa", "import Config", parent=use)
    log.block("msg_01EZLYTq", text("The exporter is configured in runtime.exs."))
    log.user("Now point it at the collector on port 4318.")
    log.block("msg_01F2", text("Done: the endpoint is http://collector:4318."))

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"), format="claude-code")

    assert [w["role"] for w in wires(transcript)] == ["user", "assistant"]
    assert all_text(wires(transcript)[0]) == "Now point it at the collector on port 4318."
    assert any("before the first user message was skipped" in n for n in transcript.notes)
    assert any("tool results before the first user prompt" in n for n in transcript.notes)


def test_a_log_with_no_user_prompt_is_refused_by_name(tmp_path: Path) -> None:
    log = RealLog()
    log.result("toolu_01VzQ2", "config :opentelemetry, traces_exporter: :otlp", parent="x")
    log.block("msg_01CA3kyS", text("I see the issue - the configuration format."))

    with pytest.raises(TranscriptError, match="no conversation"):
        load_transcript(log.write(tmp_path / "s.jsonl"), format="claude-code")
