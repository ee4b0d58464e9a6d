"""Models that bind each thinking block to its prefix (preserved thinking): which sessions
bind, what waits for the end of a tool loop, what a compaction drops and records, and how a
loop that no longer fits goes on."""

from __future__ import annotations

import itertools
from typing import Any
from uuid import UUID, uuid4

import pytest

from abridged.adapters.anthropic.request import render_request
from abridged.application.auditing import audit_events
from abridged.application.ports import RequestOptions
from abridged.application.service import Sessions
from abridged.domain.capabilities import STRICTEST, ModelCapabilities, capabilities_for
from abridged.domain.errors import InvalidSettingsError
from abridged.domain.messages import Message, RedactedThinkingBlock, ThinkingBlock
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.conftest import MakeApp
from tests.support.anthropic_rules import violations
from tests.support.builders import TOOLS, thinking_exchange, words
from tests.support.checks import stored_version
from tests.support.fakes import FakeTokenCounter
from tests.support.thinking_binding import sign_reply

BOUND = "claude-fable-5-1"
THINKING = RequestOptions(thinking={"type": "adaptive"})


def start(app: Sessions, model: str = BOUND, window: int = 6_000, **settings: Any) -> UUID:
    return app.start_session(
        model=model,
        context_window=window,
        max_output_tokens=500,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0, **settings),
    )


def thinking_in(messages: tuple[Message, ...]) -> list[Any]:
    return [
        b
        for m in messages
        for b in m.content
        if isinstance(b, ThinkingBlock | RedactedThinkingBlock)
    ]


def test_the_capabilities_table_knows_todays_models_and_is_strictest_for_unknown_ones() -> None:
    assert capabilities_for("claude-fable-5-1-20261001").prefix_bound_thinking
    assert capabilities_for("claude-opus-5-5").system_messages
    assert not capabilities_for("claude-sonnet-4-5").prefix_bound_thinking
    assert capabilities_for("house-model-2027") == STRICTEST
    # Fable 5.1 reads Opus 5.x thinking; Opus 5.5 does not read Fable's.
    assert capabilities_for(BOUND).reads(BOUND, "claude-opus-5-5")
    assert not capabilities_for("claude-opus-5-5").reads("claude-opus-5-5", BOUND)


def test_a_host_adds_rows_and_a_bad_row_is_refused(make_app: MakeApp) -> None:
    app = make_app(model_capabilities={"house-model": {"prefix_bound_thinking": False}})
    assert app.capabilities("house-model-v2") == ModelCapabilities(prefix_bound_thinking=False)
    assert not app.session(start(app, model="house-model-v2")).thinking_bound
    assert app.session(start(app, model="another-model")).thinking_bound
    with pytest.raises(InvalidSettingsError, match="prefix_bound_thinking must be true or false"):
        make_app(model_capabilities={"m": {"prefix_bound_thinking": "yes"}})
    with pytest.raises(InvalidSettingsError, match="unknown model capabilities: window"):
        make_app(model_capabilities={"m": {"window": 5}})


def test_older_thinking_stays_byte_for_byte_between_compactions(app: Sessions) -> None:
    # On a model that does not bind thinking, this thinking would be dropped on its own
    # (tests/unit/test_triggers.py); here that would change the prefix of the later block.
    session_id = start(app, window=100_000, reasoning_keep_turns=1, prune_min_share=0.0)
    first_call, first_result = thinking_exchange(words(30), thought="old reasoning")
    app.append_message(session_id, Message.user("One"))
    app.record_reply(session_id, first_call)
    app.append_message(session_id, first_result)
    app.record_reply(session_id, Message.assistant("ok"))
    app.append_message(session_id, Message.user("Two"))
    second_call, second_result = thinking_exchange(words(30), thought="current reasoning")
    app.record_reply(session_id, second_call)
    app.append_message(session_id, second_result)

    context = app.prepare_request(session_id).context

    assert thinking_in(context.messages) == [first_call.content[0], second_call.content[0]]
    assert not [e for e in app.history(session_id) if isinstance(e, Session.ReasoningDowngraded)]


def uncached(messages: list[Any]) -> list[Any]:
    """Messages without their cache breakpoints, which move from request to request."""
    return [
        {
            **m,
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in messages
    ]


def loop(app: Sessions, session_id: UUID, steps: int, size: int) -> list[dict[str, Any]]:
    """A tool loop led by thinking, each reply signed over the request that produced it;
    the bodies sent."""
    bodies = []
    for step in range(steps):
        prepared = app.prepare_request(session_id)
        body = render_request(prepared.context, model=BOUND, max_tokens=500, options=THINKING)
        bodies.append(body)
        call, result = thinking_exchange(words(size), thought=f"step {step}")
        reply = {"role": "assistant", "content": list(call.to_wire()["content"])}
        if "thinking" in body:
            reply["content"] = sign_reply(body, reply["content"])
        else:
            reply["content"] = [b for b in reply["content"] if b["type"] != "thinking"]
        app.record_reply(session_id, reply)
        app.append_message(session_id, result)
    return bodies


def test_an_open_thinking_loop_only_appends_while_it_fits(app: Sessions) -> None:
    # Past the threshold (30% of 6,000) and below the budget, nothing before the loop's
    # latest message changes: no prune, no compaction, no downgrade.
    session_id = start(app, window=6_000, threshold_ratio=0.3, prune_min_share=0.0)
    app.append_message(session_id, Message.user("Refactor the parser."))

    bodies = loop(app, session_id, steps=10, size=200)

    assert all(violations(body) == [] for body in bodies)
    for before, after in itertools.pairwise(bodies):
        sent = uncached(before["messages"])
        assert uncached(after["messages"])[: len(sent)] == sent
    session = app.session(session_id)
    assert session.estimate() > session.limits.threshold
    assert session.generation == 0
    assert session.prefix_revision == 0


def test_a_compaction_at_the_next_prompt_drops_the_thinking_it_invalidated(app: Sessions) -> None:
    # The compaction keeps the last two turns; the earlier one's thinking was produced under
    # the summarized messages, so it leaves the view with them, recorded with its reason.
    session_id = start(app, window=6_000, threshold_ratio=0.3, target_ratio=0.5, ledger_share=0.0)
    app.append_message(session_id, Message.user("Refactor the parser."))
    loop(app, session_id, steps=6, size=200)
    app.record_reply(session_id, Message.assistant("Done."))
    app.append_message(session_id, Message.user("Check the tests."))
    loop(app, session_id, steps=3, size=150)
    app.record_reply(session_id, Message.assistant("Done."))
    app.append_message(session_id, Message.user("Now the lexer."))

    prepared = app.prepare_request(session_id)
    body = render_request(prepared.context, model=BOUND, max_tokens=500, options=THINKING)

    assert prepared.compaction is not None
    assert prepared.compaction.turns_kept == 2
    assert thinking_in(prepared.context.messages) == []
    assert violations(body) == []
    downgraded = [e for e in app.history(session_id) if isinstance(e, Session.ReasoningDowngraded)]
    assert len(downgraded) == 1
    assert len(downgraded[0].blocks) == 3
    assert "prefix changed" in downgraded[0].reason
    # What the loop produces from here on is bound to the new prefix, and stays.
    bodies = loop(app, session_id, steps=3, size=50)
    assert all(violations(b) == [] for b in bodies)
    assert len(thinking_in(app.prepare_request(session_id).context.messages)) == 3


def test_replies_record_the_prefix_revision_they_were_produced_under(app: Sessions) -> None:
    session_id = start(app, window=6_000, threshold_ratio=0.3)
    app.append_message(session_id, Message.user("Refactor the parser."))
    loop(app, session_id, steps=10, size=200)
    app.record_reply(session_id, Message.assistant("Done."))
    app.append_message(session_id, Message.user("Now the lexer."))
    app.prepare_request(session_id)
    app.record_reply(session_id, Message.assistant("On it."))

    replies = [
        e
        for e in app.history(session_id)
        if isinstance(e, Session.MessageAppended) and e.message.role.value == "assistant"
    ]
    assert {e.prefix_revision for e in replies[:-1]} == {0}
    assert replies[-1].prefix_revision == app.session(session_id).prefix_revision > 0
    assert all(f.matches for f in audit_events(app.history(session_id)).findings)


def test_a_loop_that_no_longer_fits_goes_on_with_thinking_paused(app: Sessions) -> None:
    session_id = start(app, window=6_000, threshold_ratio=0.3)
    app.append_message(session_id, Message.user("Refactor the parser."))

    bodies = loop(app, session_id, steps=30, size=200)

    assert app.session(session_id).generation > 0
    assert all(violations(b) == [] for b in bodies)
    # Adaptive thinking takes a loop whose first reply has no thinking: its settings stay.
    assert all(b["thinking"] == THINKING.thinking for b in bodies)
    assert app.prepare_request(session_id).context.thinking_paused
    # Manual thinking does not: it is left out until the next prompt.
    prepared = app.prepare_request(session_id)
    manual = RequestOptions(thinking={"type": "enabled", "budget_tokens": 1_024})
    assert "thinking" not in render_request(
        prepared.context, model="claude-sonnet-4-6", max_tokens=2_000, options=manual
    )
    app.record_reply(session_id, Message.assistant("Done."))
    app.append_message(session_id, Message.user("Next task."))
    prepared = app.prepare_request(session_id)
    body = render_request(prepared.context, model=BOUND, max_tokens=500, options=THINKING)
    assert "thinking" in body


def test_the_audit_finds_thinking_sent_under_a_changed_prefix() -> None:
    # A session that pruned under a bound thinking block without dropping it: the service
    # never records this, so it is made with the aggregate's commands directly.
    from abridged.domain.pruning import PrunedOutput, PrunePlan

    session = Session(  # type: ignore[call-arg]
        id=uuid4(),
        model=BOUND,
        context_window=100_000,
        reserved_output=500,
        settings=CompactionSettings(),
        settings_fingerprint=CompactionSettings().fingerprint,
        system="s",
        tools=TOOLS,
        system_tokens=1,
        tools_tokens=10,
        token_counter="fake",
        metadata={},
        tags=(),
        thinking_bound=True,
    )
    call, result = thinking_exchange(words(50))
    session.append(Message.user("Go"), (1,), FakeTokenCounter().count)
    session.append(call, (5, 5), FakeTokenCounter().count, reply=True)
    session.append(result, (50,), FakeTokenCounter().count)
    tool_id = call.content[1].id  # type: ignore[union-attr]
    pruned = PrunedOutput(2, 0, tool_id, "read_file", "prune", "[pruned]", 50, 3)
    session.prune(PrunePlan(3, (pruned,), "test"), (pruned,))
    session.append(Message.assistant("next"), (1,), FakeTokenCounter().count, reply=True)

    findings = audit_events(session.collect_events()).findings

    stale = [f for f in findings if not f.matches and f.event == "MessageAppended"]
    assert len(stale) == 1
    assert "thinking sent under a changed prefix: message 2" in stale[0].detail


def test_a_message_shown_reduced_for_a_smaller_window_takes_the_thinking_after_it(
    app: Sessions,
) -> None:
    # The window shrinks under an open loop that no cut can make fit: the prompt and the
    # result, shown whole for the larger window, are reduced again (`MessagesReshown`) and the
    # request then fits without a compaction. The loop's thinking was produced under the
    # prompt as it was: it leaves the view with the change, and the loop goes on without it.
    session_id = start(app, window=12_000, threshold_ratio=0.9, tool_output_share=0.5)
    app.append_message(session_id, Message.user("Read this: " + words(4_800)))
    bodies = loop(app, session_id, steps=1, size=4_500)
    app.reconfigure(session_id, context_window=5_000)

    prepared = app.prepare_request(session_id)
    body = render_request(prepared.context, model=BOUND, max_tokens=500, options=THINKING)

    history = app.history(session_id)
    assert [type(e).__name__ for e in history].count("MessagesReshown") == 1
    assert prepared.compaction is None
    assert prepared.context.thinking_paused
    # No block of the loop is sent; adaptive thinking, which takes a loop without it, stays.
    assert not any(
        b.get("type") in ("thinking", "redacted_thinking")
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
    )
    assert body["thinking"] == {"type": "adaptive"}
    assert violations(bodies[0]) == violations(body) == []
    assert all(f.matches for f in audit_events(history).findings)


def test_a_prune_that_fits_an_open_loop_brings_the_compaction_due_with_it(
    app: Sessions,
) -> None:
    # Outputs shown by name outside the protected window (keep_none) are never put off for
    # a compaction: the loop outgrows the budget, a prune makes it fit, still past the
    # threshold, and the loop's thinking, its prefix changed, leaves the view. Nothing holds
    # the compaction back any more: it runs in the same preparation, so the prefix moves
    # once, and preparing again (a host's retry) writes nothing and sends the same.
    session_id = start(
        app,
        window=6_000,
        threshold_ratio=0.1,
        tool_output_mode="keep_none",
        prune_strategy="name-only",
        prune_protect_share=0.05,
        ledger_share=0.0,
    )
    app.append_message(session_id, Message.user("Refactor the parser."))
    for step in range(30):
        version = stored_version(app, session_id)
        prepared = app.prepare_request(session_id)
        written = {type(e) for e in app.history(session_id) if e.originator_version > version}
        if Session.ToolsPruned in written:
            break
        call, result = thinking_exchange(words(200), thought=f"step {step}")
        app.record_reply(session_id, call)
        app.append_message(session_id, result)
    else:
        pytest.fail("the loop never outgrew its budget")

    assert {Session.CompactionCompleted, Session.ReasoningDowngraded} <= written
    assert prepared.compaction is not None
    version = stored_version(app, session_id)
    again = app.prepare_request(session_id)
    assert stored_version(app, session_id) == version
    assert again.context.messages == prepared.context.messages


@pytest.mark.parametrize("threshold_ratio", [0.1, 0.2, 0.3])
def test_a_compaction_that_stays_past_the_threshold_records_its_guard_after_its_downgrade(
    app: Sessions, threshold_ratio: float
) -> None:
    # The compaction drops the thinking whose prefix it changed, which lowers the request
    # below what the compaction left: with no growth asked for, the guard then holds. It is
    # recorded in that preparation, on the request as it is sent, so preparing again (a
    # host's retry) writes nothing and sends the same.
    session_id = start(
        app,
        threshold_ratio=threshold_ratio,
        min_growth_share=0.0,
        cooldown_messages=0,
        ledger_share=0.0,
        spare_recent_tail=False,
    )
    checked = 0
    for step in range(40):
        app.append_message(session_id, Message.user(f"Step {step}: {words(60)}"))
        for _ in range(2):
            version = stored_version(app, session_id)
            prepared = app.prepare_request(session_id)
            written = [e for e in app.history(session_id) if e.originator_version > version]
            kinds = {type(e) for e in written}
            if {Session.CompactionCompleted, Session.ReasoningDowngraded} <= kinds:
                checked += 1
                version = stored_version(app, session_id)
                again = app.prepare_request(session_id)
                assert stored_version(app, session_id) == version, [
                    type(e).__name__
                    for e in app.history(session_id)
                    if e.originator_version > version
                ]
                assert again.context.messages == prepared.context.messages
            call, result = thinking_exchange(words(150), thought=f"step {step}")
            app.record_reply(session_id, call)
            app.append_message(session_id, result)
        app.prepare_request(session_id)
        app.record_reply(session_id, Message.assistant(ThinkingBlock("done", "sig-d"), "Done."))
    assert checked, "no compaction downgraded thinking"
    assert audit_events(list(app.history(session_id))).ok
