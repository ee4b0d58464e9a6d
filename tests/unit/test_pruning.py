"""Pruning old tool outputs: batched, forward-only, recorded, and kind to the prompt cache."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from abridged.adapters.anthropic.request import render_request
from abridged.application.service import Sessions
from abridged.domain.messages import Message, Role
from abridged.domain.pruning import PAST_THRESHOLD, WITH_COMPACTION, head_tail
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, exchange, thinking_exchange, words
from tests.support.checks import check_request
from tests.support.fakes import FakeTokenCounter

COUNTER = FakeTokenCounter()


def start(app: Sessions, window: int = 20_000, **settings: object) -> UUID:
    """A session whose old outputs `auto` prunes below the threshold too (these tests are
    about how pruning works, not when a session is first pruned)."""
    settings.setdefault("whole_until_threshold", False)
    return app.start_session(
        model="claude-test",
        context_window=window,
        max_output_tokens=2_000,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(**settings),  # type: ignore[arg-type]
    )


def agent_loop(
    app: Sessions, session_id: UUID, steps: int, size: int = 300
) -> list[dict[str, Any]]:
    """One long turn of tool calls; returns every request body sent."""
    app.append_message(session_id, Message.user("Audit every module."))
    bodies = []
    for i in range(steps):
        call, result = exchange([f"module {i}\n" + words(size)], name="read_file")
        bodies.append(check_request(app.prepare_request(session_id), COUNTER))
        app.record_reply(session_id, call)
        app.append_message(session_id, result)
    bodies.append(check_request(app.prepare_request(session_id), COUNTER))
    return bodies


def pruned_events(app: Sessions, session_id: UUID) -> list[Session.ToolsPruned]:
    return [e for e in app.history(session_id) if isinstance(e, Session.ToolsPruned)]


def test_old_outputs_are_pruned_in_batches_and_the_boundary_only_moves_forward(
    app: Sessions,
) -> None:
    session_id = start(
        app, window=60_000, threshold_ratio=1.0, prune_protect_share=0.2, prune_min_share=0.1
    )
    agent_loop(app, session_id, steps=30, size=1_000)

    events = pruned_events(app, session_id)
    assert len(events) >= 2
    boundaries = [e.boundary for e in events]
    assert boundaries == sorted(set(boundaries))
    for event in events:
        assert event.tokens_after < event.tokens_before
        saved = sum(o.tokens_before - o.tokens_after for o in event.outputs)
        assert saved >= 0.1 * 58_000  # each move saves at least prune_min_share of the budget
        assert all(o.position < event.boundary for o in event.outputs)
    # The history keeps every output whole.
    appended = [
        e.message for e in app.history(session_id) if isinstance(e, Session.MessageAppended)
    ]
    assert all("[" not in r.text for m in appended for r in m.tool_results)


def test_head_tail_shows_the_first_and_last_bytes_with_a_marker(app: Sessions) -> None:
    session_id = start(app, prune_protect_share=0.1, prune_min_share=0.01)
    agent_loop(app, session_id, steps=12)

    context = app.prepare_request(session_id).context
    shown = context.messages[2].tool_results[0]
    assert isinstance(shown.content, str)
    assert shown.content.startswith("module 0\n")
    assert "…truncated" in shown.content
    assert "bytes…" in shown.content
    assert shown.tool_use_id == context.messages[1].tool_uses[0].id


def test_name_only_keeps_the_tool_name_and_the_call(app: Sessions) -> None:
    session_id = start(
        app, prune_strategy="name-only", prune_protect_share=0.1, prune_min_share=0.01
    )
    agent_loop(app, session_id, steps=12)

    context = app.prepare_request(session_id).context
    shown = context.messages[2].tool_results[0]
    assert "of read_file pruned from the context" in str(shown.content)
    assert context.messages[1].tool_uses[0].name == "read_file"


def test_per_tool_keep_policy_is_never_pruned(app: Sessions) -> None:
    session_id = start(
        app,
        prune_protect_share=0.1,
        prune_min_share=0.01,
        tool_policies={"read_file": "keep"},
        threshold_ratio=1.0,
    )
    agent_loop(app, session_id, steps=10)
    assert pruned_events(app, session_id) == []


def test_summarize_policy_shows_a_summary_of_the_whole_output(app: Sessions) -> None:
    session_id = start(
        app, prune_protect_share=0.1, prune_min_share=0.01, tool_policies={"read_file": "summarize"}
    )
    agent_loop(app, session_id, steps=12)

    outputs = [o for e in pruned_events(app, session_id) for o in e.outputs]
    assert outputs
    assert {o.policy for o in outputs} == {"summarize"}
    assert all(o.text.startswith("[summary of the output of read_file]") for o in outputs)


@pytest.mark.parametrize(("mode", "expect_pruning"), [("keep_all", False), ("keep_none", True)])
def test_global_override(app: Sessions, mode: str, expect_pruning: bool) -> None:
    session_id = start(
        app,
        tool_output_mode=mode,
        prune_min_share=0.5,
        prune_protect_share=0.1,
        threshold_ratio=1.0,
    )
    agent_loop(app, session_id, steps=10)
    assert bool(pruned_events(app, session_id)) is expect_pruning


def test_keep_all_prunes_only_with_a_compaction(app: Sessions) -> None:
    session_id = start(
        app,
        tool_output_mode="keep_all",
        prune_protect_share=0.05,
        target_ratio=0.5,
        retained_share=0.5,
        threshold_ratio=0.7,
        ledger_share=0.4,  # room for a retained tail with outputs to prune
    )
    agent_loop(app, session_id, steps=60)
    history = app.history(session_id)
    pruned = [k for k, e in enumerate(history) if isinstance(e, Session.ToolsPruned)]
    assert pruned
    for k in pruned:
        # Recorded in the preparation that compacted, right after it: one move of the prefix.
        event = history[k]
        assert isinstance(history[k - 1], Session.CompactionCompleted)
        assert isinstance(event, Session.ToolsPruned)
        assert event.reason == WITH_COMPACTION


def test_a_compaction_due_is_not_put_off_by_a_prune(app: Sessions) -> None:
    session_id = start(app, prune_protect_share=0.05, prune_min_share=1.0)
    agent_loop(app, session_id, steps=60)
    history = app.history(session_id)
    assert any(isinstance(e, Session.CompactionCompleted) for e in history)
    # Past the threshold, the prune waits for the compaction instead of standing in for it.
    assert all(e.reason != PAST_THRESHOLD for e in pruned_events(app, session_id))


def test_requests_keep_their_prefix_between_prunes_and_compactions(app: Sessions) -> None:
    session_id = start(app, prune_protect_share=0.2, prune_min_share=0.05)
    app.append_message(session_id, Message.user("Audit every module."))
    previous: list[dict[str, Any]] | None = None
    stable_pairs = 0
    for _i in range(40):
        before = len(app.history(session_id))
        prepared = app.prepare_request(session_id)
        body = render_request(prepared.context, model="m", max_tokens=1)
        changed = any(
            isinstance(e, Session.ToolsPruned | Session.CompactionCompleted)
            for e in app.history(session_id)[before:]
        )
        messages = [strip_cache(m) for m in body["messages"]]
        if previous is not None and not changed:
            assert messages[: len(previous)] == previous
            stable_pairs += 1
        previous = messages
        assert sum(count_breakpoints(m) for m in body["messages"]) + 1 <= 4
        call, result = exchange([words(250)], name="read_file")
        app.record_reply(session_id, call)
        app.append_message(session_id, result)
    assert stable_pairs > 20


def strip_cache(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": message["role"],
        "content": [
            {k: v for k, v in b.items() if k != "cache_control"} for b in message["content"]
        ],
    }


def count_breakpoints(message: dict[str, Any]) -> int:
    return sum(1 for b in message["content"] if "cache_control" in b)


def test_head_tail_never_splits_a_multibyte_character() -> None:
    text = "日本語" * 1_000
    shown = head_tail(text, 100, 100)
    assert shown.startswith("日本語")
    assert shown.endswith("日本語")
    assert "bytes…" in shown
    assert "\ufffd" not in shown


def test_a_pruned_session_replays_to_the_same_state(app: Sessions) -> None:
    session_id = start(app, prune_protect_share=0.1, prune_min_share=0.01)
    agent_loop(app, session_id, steps=12)
    live = app.session(session_id)
    replayed = None
    for event in app.history(session_id):
        replayed = event.mutate(replayed)
    assert replayed is not None
    assert replayed.entries == live.entries
    assert replayed.prune_boundary == live.prune_boundary
    assert replayed.tail_tokens == live.tail_tokens
    assert next(m.role for m in app.prepare_request(session_id).context.messages) is Role.USER


def test_a_prune_still_comes_first_when_no_tail_fits_with_whole_outputs(app: Sessions) -> None:
    # A tool loop led by thinking cannot be cut inside (its first message must stay), so the
    # only tail a compaction could keep is the whole loop: over the budget with its outputs
    # whole, within it once the older ones are pruned.
    session_id = start(app, window=12_000)
    app.append_message(session_id, Message.user("Read the modules."))
    call, result = thinking_exchange(words(2_000))
    app.append_message(session_id, call)
    app.append_message(session_id, result)
    for _ in range(4):
        call, result = exchange([words(2_000)], name="read_file")
        app.append_message(session_id, call)
        app.append_message(session_id, result)

    body = check_request(app.prepare_request(session_id), COUNTER)

    assert len(body["messages"]) >= 11  # the whole loop is sent
    assert [e.reason for e in pruned_events(app, session_id)][:1] == [PAST_THRESHOLD]
