"""The tau-bench, moatless-tools and SWE-agent converters (`tests.support.real_sources`) on
small trajectories written here: no source repository is needed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.real_sources import moatless, sweagent, taubench
from tests.support.real_sources.check_table import below, line
from tests.support.real_sources.common import (
    content_blocks,
    merged,
    problems,
    tool_use,
    unique_ids,
    write_session,
)


def _call(ident: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": ident, "type": "function", "function": {"name": name, "arguments": arguments}}


def _types(record: dict[str, Any]) -> list[str]:
    return [block["type"] for block in record["content"]]


def test_a_repeated_call_id_is_renamed_and_its_result_follows_it() -> None:
    records: list[dict[str, Any]] = [
        {"role": "user", "content": content_blocks("go")},
        {"role": "assistant", "content": [tool_use("c1", "f", "{}")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "a"}]},
        {"role": "assistant", "content": [tool_use("c1", "f", "{}")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "b"}]},
    ]
    assert problems(records) != []
    assert unique_ids(records) == 1
    assert records[3]["content"][0]["id"] == "c1_2"
    assert records[4]["content"][0]["tool_use_id"] == "c1_2"
    assert problems(records) == []


def test_messages_of_one_role_are_joined_results_first() -> None:
    joined = merged(
        [
            {"role": "user", "content": content_blocks("task")},
            {"role": "user", "content": content_blocks("task")},
            {"role": "assistant", "content": []},
            {"role": "assistant", "content": content_blocks("ok")},
            {"role": "user", "content": content_blocks("note")},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]},
        ]
    )
    assert [r["role"] for r in joined] == ["user", "assistant", "user"]
    assert _types(joined[2]) == ["tool_result", "text"]


@pytest.mark.parametrize(
    ("records", "found"),
    [
        ([{"role": "assistant", "content": content_blocks("hi")}], "expected 'user'"),
        ([{"role": "user", "content": []}], "no content"),
        ([{"role": "user", "content": [{"type": "text", "text": " "}]}], "empty text"),
        (
            [
                {"role": "user", "content": content_blocks("go")},
                {"role": "assistant", "content": [tool_use("c1", "f", {})]},
            ],
            "unanswered",
        ),
        (
            [
                {"role": "user", "content": content_blocks("go")},
                {"role": "assistant", "content": [tool_use("c1", "f", {})]},
                {"role": "user", "content": content_blocks("no result")},
            ],
            "do not answer",
        ),
    ],
)
def test_invalid_sequences_are_named(records: list[dict[str, Any]], found: str) -> None:
    assert any(found in problem for problem in problems(records))


def test_arguments_that_are_not_an_object_are_kept() -> None:
    assert tool_use("c", "f", "not json")["input"] == {"arguments": "not json"}
    assert tool_use("c", "f", "[1]")["input"] == {"arguments": [1]}
    assert tool_use("c", "f", "")["input"] == {}


def test_a_session_is_written_with_its_stats_and_an_invalid_one_is_not(tmp_path: Path) -> None:
    records = [
        {"role": "user", "content": content_blocks("hello")},
        {"role": "assistant", "content": content_blocks("hi")},
    ]
    path = write_session(tmp_path, "s", records, {"system": "be brief"})
    assert [json.loads(x) for x in path.read_text().splitlines()] == records
    meta = json.loads((tmp_path / "s.meta.json").read_text())
    assert meta["system"] == "be brief"
    assert meta["stats"]["messages"] == 2
    with pytest.raises(ValueError, match="bad"):
        write_session(tmp_path, "bad", records[1:], {})


def test_a_tau_bench_run_becomes_alternating_messages() -> None:
    run = {
        "task_id": 2,
        "reward": 1.0,
        "trial": 0,
        "traj": [
            {"role": "system", "content": "# Policy"},
            {"role": "user", "content": "Change my flight."},
            {"role": "assistant", "content": None, "tool_calls": [_call("c1", "get", '{"a":1}')]},
            {"role": "tool", "tool_call_id": "c1", "name": "get", "content": "{}"},
            {"role": "assistant", "content": "Done?", "tool_calls": [_call("c1", "upd", "{}")]},
            {"role": "tool", "tool_call_id": "c1", "name": "upd", "content": "ok"},
            {"role": "user", "content": "Thanks."},
            {"role": "assistant", "content": "Bye."},
        ],
    }
    records, system, renamed = taubench.convert_run(run)
    assert system == "# Policy"
    assert renamed == 1
    assert [r["role"] for r in records] == ["user", "assistant"] * 3
    assert records[1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "get", "input": {"a": 1}}
    ]
    assert _types(records[2]) == ["tool_result"]
    assert records[3]["content"][0]["text"] == "Done?"
    # The result and the user's next turn share one message, the result first.
    assert _types(records[4]) == ["tool_result", "text"]
    assert records[4]["content"][0]["tool_use_id"] == "c1_2"
    assert problems(records) == []


def test_the_longest_tau_bench_runs_are_chosen_by_messages_then_characters() -> None:
    def run(messages: int, text: str) -> dict[str, Any]:
        return {"traj": [{"role": "user", "content": text}] * messages}

    assert taubench.longest([run(3, "a"), run(5, "a"), run(5, "bbb"), run(1, "a")], 2) == [1, 2]


def _node(node_id: int, parent: int | None, messages: list[dict[str, Any]]) -> dict[str, Any]:
    build = {"model": "m", "input": messages, "response": {"id": "r"}, "usage": {"t": 1}}
    return {"node_id": node_id, "parent_id": parent, "completions": {"build_action": build}}


def _moatless(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"instance_id": "x__y-1", "evaluation_name": "e"},
        "agent": {"system_prompt": "sys", "completion": {"model": "m"}},
        "nodes": [{"node_id": 0, "parent_id": None}, *nodes],
    }


def test_moatless_takes_the_largest_request_or_the_deepest_node() -> None:
    call = {"type": "tool_use", "id": "call_1", "name": "View", "input": {}}
    result = {"tool_use_id": "call_1", "content": "x" * 500, "type": "tool_result"}
    big: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
    big.append({"role": "assistant", "content": [call]})
    big.append({"role": "user", "content": [result]})
    small = [{"role": "user", "content": "task"}]
    trajectory = _moatless([_node(1, 0, big), _node(2, 1, small)])
    records, meta = moatless.convert(trajectory)
    assert meta["node_id"] == 1
    assert meta["system"] == "sys"
    assert meta["instance_id"] == "x__y-1"
    assert records[0]["content"] == [{"type": "text", "text": "task"}]
    assert records[2]["content"] == [result]  # a block list is kept as it is
    assert moatless.convert(trajectory, deepest=True)[1]["node_id"] == 2


def test_moatless_joins_a_task_sent_twice_and_renames_a_reused_id() -> None:
    def exchange(text: str) -> list[dict[str, Any]]:
        call = {"type": "tool_use", "id": "call_1", "name": "View", "input": {"q": text}}
        result = {"type": "tool_result", "tool_use_id": "call_1", "content": text}
        return [{"role": "assistant", "content": [call]}, {"role": "user", "content": [result]}]

    messages = [{"role": "user", "content": "task"}] * 2 + exchange("a") + exchange("b")
    records, meta = moatless.convert(_moatless([_node(1, 0, messages)]))
    assert meta["joined_messages"] == 1
    assert meta["renamed_tool_use_ids"] == 1
    assert problems(records) == []


def test_a_moatless_request_starting_with_the_agent_is_not_written(tmp_path: Path) -> None:
    messages = [{"role": "assistant", "content": "I'll edit."}, {"role": "user", "content": "ok"}]
    with pytest.raises(ValueError, match="expected 'user'"):
        moatless.write_instance(tmp_path, _moatless([_node(1, 0, messages)]), "p", "c")


def test_a_function_calling_swe_agent_history() -> None:
    call = _call("call_a", "bash", '{"command":"ls"}')
    trajectory = {
        "history": [
            {"role": "system", "content": "SETTING"},
            {"role": "user", "content": "Fix the issue."},
            {"role": "assistant", "content": "List.", "tool_calls": [call]},
            {"role": "tool", "content": "a.py", "tool_call_ids": ["call_a"]},
            {"role": "assistant", "content": "Again.", "tool_calls": [call]},
            {"role": "tool", "content": "a.py", "tool_call_ids": ["call_a"]},
        ],
        "info": {"exit_status": "submitted"},
    }
    assert sweagent.is_function_calling(trajectory)
    records, system, renamed = sweagent.convert(trajectory)
    assert system == "SETTING"
    assert renamed == 1
    assert problems(records) == []
    assert records[3]["content"][1]["id"] == "call_a_2"


def test_a_text_swe_agent_history_keeps_observations_as_user_text() -> None:
    trajectory = {
        "history": [
            {"role": "system", "content": "SETTING"},
            {"role": "user", "content": "Solve it.", "agent": "primary"},
            {"role": "assistant", "content": "```\nls\n```", "action": "ls\n"},
            {"role": "user", "content": "flag.txt"},
        ]
    }
    assert not sweagent.is_function_calling(trajectory)
    records, _, _ = sweagent.convert(trajectory)
    assert [r["role"] for r in records] == ["user", "assistant", "user"]
    assert records[2]["content"] == [{"type": "text", "text": "flag.txt"}]


def test_swe_agent_names_differ_for_one_stem_in_two_folders() -> None:
    first = sweagent.session_name("a/marshmallow-1867.traj")
    assert first.startswith("sweagent-marshmallow-1867-")
    assert first != sweagent.session_name("b/marshmallow-1867.traj")


def test_the_table_marks_a_kind_below_the_reference() -> None:
    def outcome(share: float) -> dict[str, Any]:
        return {
            "requests": 3,
            "not_sent": 0,
            "short_tails": 0,
            "recent_depth_min": 4,
            "compactions": 1,
            "prunes": 0,
            "billed": 100.0 * (2 - share),
            "facts_final": share,
            "facts_final_by_kind": {"paths": share},
            "facts_by_kind_count": {"paths": 4},
        }

    part = {"abridged": outcome(0.5), "langchain": outcome(1.0), "seconds": 1.0}
    assert below(part) == ["`paths` 0.50<1.00 (4)"]
    row = {
        "session": "/x/s.jsonl",
        "window": 16_000,
        "simulate": part,
        "kinds": {"seconds": 0.5},
        "replay": {"invalid": 0, "audit": [], "seconds": 0.2},
    }
    assert "| s | 16k | 3 | 0 (0) | 0 | 4 | 1/0 | 1.500 |" in line(row)
