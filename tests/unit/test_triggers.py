"""Triggers, loop guards, hooks, reasoning and per-turn content."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import pytest

from abridged.application.ports import CompactionReport, HookVerdict
from abridged.application.service import Sessions
from abridged.domain import planner
from abridged.domain.errors import CompactionFailedError, NothingToCompactError
from abridged.domain.messages import Message, RedactedThinkingBlock, Role, TextBlock, ThinkingBlock
from abridged.domain.planner import Decision
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.conftest import MakeApp
from tests.support.builders import TOOLS, exchange, thinking_exchange, turn, words
from tests.support.checks import check_request
from tests.support.checks import feed as feed_checked
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

COUNTER = FakeTokenCounter()


LEGACY_MODEL = "claude-sonnet-4-5"
"""A model whose thinking is not bound to its prefix: older thinking may be dropped on its own
(tests/unit/test_preserved_thinking.py covers the models that bind it)."""


def start(app: Sessions, window: int = 4_000, **settings: object) -> UUID:
    return app.start_session(
        model=LEGACY_MODEL,
        context_window=window,
        max_output_tokens=500,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(**settings),  # type: ignore[arg-type]
    )


def feed(app: Sessions, session_id: UUID, messages: list[Message]) -> None:
    feed_checked(app, session_id, messages, COUNTER)


def events_of(app: Sessions, session_id: UUID, kind: type) -> list[Any]:
    return [e for e in app.history(session_id) if isinstance(e, kind)]


def test_manual_compaction_runs_below_the_threshold_with_focus_instructions(
    app: Sessions, summarizer: FakeSummarizer
) -> None:
    session_id = start(app, window=100_000)
    for i in range(3):
        feed(app, session_id, list(turn(f"Request {i}", [words(50)])))
    app.append_message(session_id, Message.user("Now the docs."))

    report = app.compact(session_id, instructions="keep the parser errors")

    assert report.trigger == "manual"
    hits = events_of(app, session_id, Session.CompactionThresholdHit)
    assert hits[-1].decision.trigger == "manual"
    assert summarizer.calls[-1][2] == "keep the parser errors"
    check_request(app.prepare_request(session_id), COUNTER)


def test_manual_compaction_fails_loudly_and_records_the_failure(make_app: MakeApp) -> None:
    app = make_app(summarizer=FakeSummarizer(fail=10))
    session_id = start(app, window=100_000)
    for i in range(3):
        feed(app, session_id, list(turn(f"Request {i}", [words(50)])))
    app.append_message(session_id, Message.user("Now the docs."))

    with pytest.raises(CompactionFailedError, match="fake summarizer failure"):
        app.compact(session_id)

    failed = events_of(app, session_id, Session.CompactionFailed)
    assert [f.fallback for f in failed] == ["raise"]
    assert events_of(app, session_id, Session.CompactionCompleted) == []
    check_request(app.prepare_request(session_id), COUNTER)


def test_manual_compaction_with_nothing_to_summarize_is_a_typed_error(app: Sessions) -> None:
    session_id = start(app)
    app.append_message(session_id, Message.user("Hello"))
    with pytest.raises(NothingToCompactError):
        app.compact(session_id)


def test_a_requested_compaction_waits_for_the_turn_to_end(app: Sessions) -> None:
    session_id = start(app, window=100_000)
    feed(app, session_id, list(turn("First", [words(50)])))
    app.append_message(session_id, Message.user("Second"))
    call, result = exchange([words(20)])
    app.record_reply(session_id, call)
    app.append_message(session_id, result)

    app.request_compaction(session_id, "the extension wants a fresh start")
    mid_turn = app.prepare_request(session_id)
    app.record_reply(session_id, Message.assistant("Done with the second."))
    app.append_message(session_id, Message.user("Third"))
    next_turn = app.prepare_request(session_id)

    assert mid_turn.compaction is None
    assert next_turn.compaction is not None
    assert next_turn.compaction.trigger == "requested"
    assert app.session(session_id).compaction_requested is None


def test_a_compaction_right_after_another_is_suppressed_once(make_app: MakeApp) -> None:
    # A summary as large as allowed keeps the context near its threshold after compacting.
    app = make_app(summarizer=FakeSummarizer(words(2_000, "fact")))
    session_id = start(
        app,
        window=3_000,
        threshold_floor_tokens=0,
        cooldown_messages=6,
        retained_share=1.0,
        keep_recent_turns=10,  # fewer than the session has: there are turns to summarize
        ledger_share=0.0,  # the guard is the point here, not the room the ledger takes
        # A late threshold and a large summary keep the context near it after compacting.
        threshold_ratio=0.7,
        target_ratio=1.0,
        summary_share=0.1,
        summaries_share=0.2,
        min_growth_share=0.0,
    )
    for i in range(12):
        feed(app, session_id, list(turn(f"Request {i}", [words(150)])))

    suppressed = events_of(app, session_id, Session.CompactionSuppressed)
    completed = events_of(app, session_id, Session.CompactionCompleted)
    assert completed
    assert suppressed
    assert all("message(s) ago" in s.reason or "reduce" in s.reason for s in suppressed)
    # The same suppression is recorded once, not on every request.
    reasons = [s.reason for s in suppressed]
    assert all(a != b for a, b in itertools.pairwise(reasons))


class RecordingHooks:
    def __init__(self, verdict: HookVerdict | None = None) -> None:
        self.verdict = verdict
        self.before: list[Decision] = []
        self.after: list[CompactionReport] = []

    def before_compaction(
        self, session_id: UUID, decision: Decision, messages: Sequence[Message]
    ) -> HookVerdict | None:
        self.before.append(decision)
        return self.verdict

    def after_compaction(self, session_id: UUID, report: CompactionReport) -> None:
        self.after.append(report)


def test_hooks_see_each_compaction_and_can_supply_the_summary(make_app: MakeApp) -> None:
    hooks = RecordingHooks(HookVerdict(summary="The host's own summary."))
    app = make_app(hooks=hooks)
    session_id = start(app, threshold_floor_tokens=0)
    for i in range(20):
        feed(app, session_id, list(turn(f"Request {i}", [words(150)])))

    completed = events_of(app, session_id, Session.CompactionCompleted)
    assert completed
    assert len(hooks.before) == len(hooks.after) == len(completed)
    assert completed[0].strategy == "hook"
    assert completed[0].summary.text.startswith("The host's own summary.")


def test_a_hook_can_cancel_a_compaction_that_is_not_needed_to_fit(make_app: MakeApp) -> None:
    hooks = RecordingHooks(HookVerdict(cancel="not now"))
    app = make_app(hooks=hooks)
    session_id = start(app, window=3_000, threshold_ratio=0.5, threshold_floor_tokens=0)
    for i in range(12):
        feed(app, session_id, list(turn(f"Request {i}", [words(100)])))

    suppressed = events_of(app, session_id, Session.CompactionSuppressed)
    assert suppressed
    assert suppressed[0].reason == "cancelled by a hook: not now"
    # When the request would not fit otherwise, the hook cannot stop the compaction.
    for i in range(10):
        feed(app, session_id, list(turn(f"More {i}", [words(150)])))
    assert events_of(app, session_id, Session.CompactionCompleted)


def test_old_thinking_is_dropped_but_the_active_loop_keeps_its_own(app: Sessions) -> None:
    session_id = start(app, window=100_000, reasoning_keep_turns=1, prune_min_share=0.0)
    first_call, first_result = thinking_exchange(words(30), thought="old reasoning")
    feed(app, session_id, [Message.user("One"), first_call, first_result, Message.assistant("ok")])
    second_call, second_result = thinking_exchange(words(30), thought="current reasoning")
    feed(app, session_id, [Message.user("Two"), second_call, second_result])

    context = app.prepare_request(session_id).context

    blocks = [b for m in context.messages for b in m.content]
    thinking = [b for b in blocks if isinstance(b, ThinkingBlock | RedactedThinkingBlock)]
    assert thinking == [second_call.content[0]]
    downgraded = events_of(app, session_id, Session.ReasoningDowngraded)
    assert downgraded
    assert downgraded[0].blocks[0].action == "dropped"


def test_old_thinking_can_be_summarized_as_plain_text_never_as_thinking(app: Sessions) -> None:
    session_id = start(app, window=100_000, reasoning_policy="summarize", prune_min_share=0.0)
    thought = "the parser fails on tabs " + words(100)
    call, result = thinking_exchange(words(30), thought=thought)
    feed(app, session_id, [Message.user("One"), call, result, Message.assistant("ok")])
    app.append_message(session_id, Message.user("Two"))

    context = app.prepare_request(session_id).context

    first_assistant = context.messages[1]
    assert isinstance(first_assistant.content[0], TextBlock)
    assert "the parser fails on tabs" in first_assistant.content[0].text
    assert not any(isinstance(b, ThinkingBlock) for m in context.messages for b in m.content)


def test_a_thinking_block_shorter_than_its_summary_is_dropped_instead(app: Sessions) -> None:
    # Summarizing "0" as plain text would make the request larger, after the planner fitted it
    # to the budget; the downgrade drops the block instead and never grows the request.
    session_id = start(app, window=100_000, reasoning_policy="summarize", prune_min_share=0.0)
    call, result = thinking_exchange(words(30), thought="0")
    feed(app, session_id, [Message.user("One"), call, result, Message.assistant("ok")])
    app.append_message(session_id, Message.user("Two"))
    before = app.session(session_id).estimate()

    prepared = app.prepare_request(session_id)

    downgraded = events_of(app, session_id, Session.ReasoningDowngraded)
    assert [b.action for b in downgraded[0].blocks] == ["dropped"]
    assert prepared.context.estimate < before


def test_a_thinking_led_tool_loop_is_only_cut_before_a_thinking_message(app: Sessions) -> None:
    session_id = start(app, window=3_000, threshold_floor_tokens=0)
    app.append_message(session_id, Message.user("Refactor everything."))
    for i in range(30):
        if i % 4 == 0:
            call, result = thinking_exchange(words(60), thought=f"plan {i}")
        else:
            call, result = exchange([words(60)])
        check_request(app.prepare_request(session_id), COUNTER)
        app.record_reply(session_id, call)
        app.append_message(session_id, result)

    context = app.prepare_request(session_id).context
    assert app.session(session_id).generation > 0
    first_assistant = next(m for m in context.messages if m.role is Role.ASSISTANT)
    assert isinstance(first_assistant.content[0], ThinkingBlock)


class Clock:
    def __init__(self) -> None:
        self.turn = 0

    def content(self, session_id: UUID) -> str | None:
        self.turn += 1
        return f"Current time: turn {self.turn}"


def test_per_turn_content_goes_last_is_counted_and_never_stored(make_app: MakeApp) -> None:
    app = make_app(context_provider=Clock())
    session_id = start(app)
    app.append_message(session_id, Message.user("Hi"))

    first = app.prepare_request(session_id)
    second = app.prepare_request(session_id)

    last = second.context.messages[-1]
    assert last.content[-1] == TextBlock("Current time: turn 2")
    assert first.context.messages[-1].content[-1] == TextBlock("Current time: turn 1")
    check_request(second, COUNTER)
    stored = events_of(app, session_id, Session.MessageAppended)
    assert all("Current time" not in e.message.text for e in stored)


@pytest.mark.parametrize("per_turn", [False, True], ids=["plain", "with per-turn content"])
def test_a_prepared_request_keeps_its_messages_while_the_session_goes_on(
    make_app: MakeApp, per_turn: bool
) -> None:
    app = make_app(context_provider=Clock() if per_turn else None)
    session_id = start(app)
    app.append_message(session_id, Message.user("Hi"))
    prepared = app.prepare_request(session_id)
    sent = list(prepared.context.messages)

    app.record_reply(session_id, Message.assistant("Hello."))
    app.append_message(session_id, Message.user("And now?"))
    later = app.prepare_request(session_id)

    assert list(prepared.context.messages) == sent
    assert len(sent) == 1
    assert len(later.context.messages) == 3
    assert later.context.messages[0] == Message.user("Hi")
    check_request(later, COUNTER)


def test_a_session_records_a_warning_when_the_provider_compacts_too(make_app: MakeApp) -> None:
    from tests.support.fakes import FakeChatModel

    chat = FakeChatModel(context_management={"edits": [{"type": "clear_tool_uses_20250919"}]})
    app = make_app(chat_model=chat)
    session_id = start(app)
    warnings = events_of(app, session_id, Session.DoubleCompactionConfigured)
    assert len(warnings) == 1
    assert "clear_tool_uses" in warnings[0].detail


class VerboseSummarizer(FakeSummarizer):
    """Ignores its limit: writes ten times what it was asked for."""

    def summarize(self, messages, *, max_tokens, instructions=None, session_model=None):  # type: ignore[no-untyped-def]
        self.calls.append((tuple(messages), max_tokens, instructions))
        from abridged.application.ports import Summary

        return Summary(text=words(max_tokens * 10, "fact"), model="verbose")


def test_an_oversize_summary_gets_one_retry_asking_for_less_then_is_cut(make_app: MakeApp) -> None:
    summarizer = VerboseSummarizer()
    app = make_app(summarizer=summarizer)
    session_id = start(app, window=3_000, threshold_floor_tokens=0)
    for i in range(12):
        feed(app, session_id, list(turn(f"Request {i}", [words(150)])))

    completed = events_of(app, session_id, Session.CompactionCompleted)
    hits = events_of(app, session_id, Session.CompactionThresholdHit)
    assert completed
    first_limit, retry_limit = summarizer.calls[0][1], summarizer.calls[1][1]
    assert retry_limit < first_limit
    assert completed[0].summary.text.endswith(" …")
    assert completed[0].summary.tokens <= hits[0].decision.summary_max_tokens


def test_decisions_with_per_turn_content_can_be_re_derived(make_app: MakeApp) -> None:
    app = make_app(context_provider=Clock())
    session_id = start(app, window=3_000, threshold_floor_tokens=0)
    for i in range(12):
        feed(app, session_id, list(turn(f"Request {i}", [words(150)])))

    hits = events_of(app, session_id, Session.CompactionThresholdHit)
    assert hits
    assert all(h.decision.extra_tokens > 0 for h in hits)
    for hit in hits:
        before = app.session(session_id, version=hit.originator_version - 1)
        assert (
            planner.decide(before, hit.decision.trigger, hit.decision.extra_tokens) == hit.decision
        )


def test_when_folding_fails_the_missing_summary_note_survives(make_app: MakeApp) -> None:
    summarizer = FakeSummarizer(words(400, "fact"))
    app = make_app(summarizer=summarizer)
    session_id = start(app, window=3_000, threshold_floor_tokens=0, keep_recent_turns=1)
    for i in range(40):
        feed(app, session_id, list(turn(f"Request {i}", [words(150)])))
        if len(app.session(session_id).summaries) >= 2:
            break
    summarizer.fail = len(summarizer.calls) + 5
    for i in range(10):
        feed(app, session_id, list(turn(f"More {i}", [words(150)])))

    truncated = [
        e
        for e in events_of(app, session_id, Session.CompactionCompleted)
        if e.strategy == "truncate"
    ]
    assert truncated
    assert all("dropped without a summary" in e.summary.text for e in truncated)


def test_an_image_only_tool_output_over_the_limit_says_what_was_omitted(app: Sessions) -> None:
    from abridged.domain.messages import ImageBlock, ToolResultBlock, ToolUseBlock

    session_id = start(app, window=4_000)
    images = tuple(
        ImageBlock("base64", media_type="image/png", data="iVBORw0KGgo=") for _ in range(3)
    )
    call = Message.assistant(ToolUseBlock("shot_1", "read_file", {"path": "screen.png"}))
    result = Message.user(ToolResultBlock("shot_1", images))
    feed(app, session_id, [Message.user("Look at the screen."), call, result])

    shown = app.prepare_request(session_id).context.messages[-1].tool_results[0]
    assert "3 image(s) of this tool output omitted" in str(shown.content)
