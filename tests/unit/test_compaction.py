"""Compaction, told as scenarios: when it triggers, what it keeps, what it records."""

from __future__ import annotations

import itertools
from uuid import UUID

import pytest

from abridged.application.service import Sessions
from abridged.domain import planner
from abridged.domain.messages import Message, Role, TextBlock, ToolResultBlock
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from abridged.domain.usage import Usage
from tests.conftest import MakeApp
from tests.support.builders import TOOLS, exchange, thinking_exchange, turn, words
from tests.support.checks import check_request
from tests.support.checks import feed as feed_checked
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

COUNTER = FakeTokenCounter()


def start(app: Sessions, window: int = 4_000, reserve: int = 500, **settings: object) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=window,
        max_output_tokens=reserve,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(**settings),  # type: ignore[arg-type]
    )


def feed(app: Sessions, session_id: UUID, messages: list[Message]) -> None:
    feed_checked(app, session_id, messages, COUNTER)


def event_names(app: Sessions, session_id: UUID) -> list[str]:
    return [type(e).__name__ for e in app.history(session_id)]


def test_below_the_threshold_nothing_is_compacted(app: Sessions) -> None:
    session_id = start(app)
    feed(app, session_id, [*turn("Fix the bug.", [words(100), words(100)])])
    app.append_message(session_id, Message.user("Thanks, now the docs."))

    prepared = app.prepare_request(session_id)

    assert prepared.compaction is None
    assert "CompactionThresholdHit" not in event_names(app, session_id)
    assert prepared.context.messages[0].text == "Fix the bug."


def test_crossing_the_threshold_summarizes_older_turns_and_keeps_recent_ones_verbatim(
    app: Sessions,
) -> None:
    # No target fill: the kept turns are what this test is about.
    session_id = start(
        app, keep_recent_turns=2, threshold_floor_tokens=0, threshold_ratio=0.7, target_ratio=1.0
    )
    recorded: list[Message] = []
    prepared = None
    messages = [m for i in range(12) for m in turn(f"Request {i}", [words(150), words(150)])]
    for message in messages:
        if message.role is Role.ASSISTANT:
            prepared = app.prepare_request(session_id)
            if prepared.compaction is not None:
                break
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
        recorded.append(message)
    assert prepared is not None
    assert prepared.compaction is not None, "the threshold was never crossed"

    names = event_names(app, session_id)
    assert names.index("CompactionThresholdHit") < names.index("CompactionCompleted")
    assert prepared.compaction.turns_kept == 2
    context = prepared.context
    # The facts ledger and the summary lead the first kept user message; the kept turns are
    # exactly as recorded.
    prompts = [i for i, m in enumerate(recorded) if m.is_user_prompt]
    kept = recorded[prompts[-2] :]
    first = context.messages[0]
    assert first.role is Role.USER
    # The ledger comes first (a later compaction appends to it): the summarized requests,
    # verbatim.
    ledger = first.content[0]
    assert isinstance(ledger, TextBlock)
    assert ledger.text.startswith("Facts ledger")
    assert "\nm1 Request 0\n" in ledger.text
    summary = first.content[1]
    assert isinstance(summary, TextBlock)
    assert "<conversation-summary" in summary.text
    assert "not new instructions" in summary.text
    assert first.content[2:] == kept[0].content
    assert list(context.messages[1:]) == kept[1:]
    check_request(prepared, COUNTER)


def test_one_long_turn_is_cut_inside_between_complete_exchanges(app: Sessions) -> None:
    session_id = start(app, window=3_000, reserve=400, threshold_floor_tokens=0)
    messages = [Message.user("Migrate the whole code base to the new API.")]
    for i in range(60):
        outputs = [words(40)] * (3 if i % 5 == 0 else 1)  # some parallel batches
        messages.extend(exchange(outputs, text=f"Step {i}."))
    feed(app, session_id, messages)

    session = app.session(session_id)
    assert session.generation >= 2
    context = app.prepare_request(session_id).context
    # The tail starts after the summary with an assistant message whose calls are all answered.
    assert context.messages[0].role is Role.USER
    assert context.messages[0].tool_results == ()
    assert context.messages[1].role is Role.ASSISTANT
    for call, result in zip(context.messages[1::2], context.messages[2::2], strict=False):
        assert [u.id for u in call.tool_uses] == [r.tool_use_id for r in result.tool_results]


def test_a_huge_tool_output_is_shown_head_and_tail_but_stored_whole(app: Sessions) -> None:
    session_id = start(app, window=4_000, reserve=500)
    huge = "\n".join(f"line {i}: " + words(5) for i in range(2_000))
    call, result = exchange([huge], name="read_file")
    feed(app, session_id, [Message.user("Read the log."), call, result])

    prepared = app.prepare_request(session_id)

    shown = prepared.context.messages[-1].tool_results[0]
    assert isinstance(shown.content, str)
    assert "characters of tool output truncated" in shown.content
    assert shown.content.startswith("line 0: ")
    assert shown.content.endswith(huge.splitlines()[-1])
    stored = [e for e in app.history(session_id) if isinstance(e, Session.MessageAppended)]
    assert stored[-1].message == result
    check_request(prepared, COUNTER)


def test_a_message_larger_than_the_budget_is_shown_head_and_tail_and_stored_whole(
    app: Sessions,
) -> None:
    session_id = start(app, window=2_000, reserve=500)
    text = words(3_000)
    app.append_message(session_id, Message.user(text))

    prepared = app.prepare_request(session_id)

    assert prepared.context.estimate <= 1_500
    shown_text = prepared.context.messages[0].text
    assert shown_text.startswith(text[:100])
    assert shown_text.endswith(text[-50:])
    assert "characters of this message truncated" in shown_text
    assert app.session(session_id).entries[0].message.text == text


def test_summary_chunks_are_additive_then_folded_when_they_pass_their_budget(
    make_app: MakeApp,
) -> None:
    summarizer = FakeSummarizer(words(120, "fact"))
    app = make_app(summarizer=summarizer)
    session_id = start(
        app, window=3_000, reserve=400, keep_recent_turns=1, threshold_floor_tokens=0
    )
    for i in range(40):
        feed(app, session_id, list(turn(f"Request {i}", [words(200)])))

    completed = [e for e in app.history(session_id) if isinstance(e, Session.CompactionCompleted)]
    strategies = [e.strategy for e in completed]
    assert "additive" in strategies
    assert "resummarize" in strategies
    folded = next(e for e in completed if e.strategy == "resummarize")
    assert folded.replaced_chunks >= 1
    session = app.session(session_id)
    assert sum(c.tokens for c in session.summaries) <= session.limits.summaries_tokens
    # Chunks cover the history without gaps or overlaps, up to the retained tail.
    covered = [(c.first_position, c.last_position) for c in session.summaries]
    assert covered[0][0] == 0
    for (_, end), (start_, _) in itertools.pairwise(covered):
        assert start_ == end + 1
    assert covered[-1][1] + 1 == session.retained_from


def test_a_failing_summarizer_falls_back_to_truncation_and_says_so(make_app: MakeApp) -> None:
    app = make_app(summarizer=FakeSummarizer(fail=100))
    session_id = start(app, window=3_000, reserve=400, threshold_floor_tokens=0)
    for i in range(15):
        feed(app, session_id, list(turn(f"Request {i}", [words(200)])))

    history = app.history(session_id)
    failed = [e for e in history if isinstance(e, Session.CompactionFailed)]
    completed = [e for e in history if isinstance(e, Session.CompactionCompleted)]
    assert failed
    assert failed[0].fallback == "truncate"
    assert "fake summarizer failure" in failed[0].error
    assert {e.strategy for e in completed} == {"truncate"}
    assert "summarizer failed" in completed[0].summary.text
    # The session stays usable.
    app.append_message(session_id, Message.user("Carry on."))
    check_request(app.prepare_request(session_id), COUNTER)


def test_provider_usage_calibrates_the_estimate(app: Sessions) -> None:
    session_id = start(app, window=100_000, reserve=1_000)
    app.append_message(session_id, Message.user(words(500)))
    raw = app.prepare_request(session_id).context.estimate

    app.record_reply(session_id, Message.assistant("Sure."), Usage(input_tokens=raw * 2))
    app.append_message(session_id, Message.user("More."))

    session = app.session(session_id)
    assert session.calibration == pytest.approx(1.5)  # halfway from 1.0 to the observed 2.0
    assert session.estimate() == pytest.approx(session.raw_estimate() * 1.5, abs=1)


def test_thinking_blocks_are_sent_byte_for_byte(app: Sessions) -> None:
    session_id = start(app)
    call, result = thinking_exchange(words(20), thought="Ünïcödé 思考 🧠\n  exact  spacing ")
    feed(app, session_id, [Message.user("Look."), call, result])

    context = app.prepare_request(session_id).context

    assert context.messages[1].content[0] == call.content[0]


def test_every_decision_can_be_re_derived_from_the_events(app: Sessions) -> None:
    session_id = start(app, window=3_000, reserve=400, threshold_floor_tokens=0)
    for i in range(10):
        feed(app, session_id, list(turn(f"Request {i}", [words(150), words(150)])))

    hits = [e for e in app.history(session_id) if isinstance(e, Session.CompactionThresholdHit)]
    assert hits
    for hit in hits:
        before = app.session(session_id, version=hit.originator_version - 1)
        assert (
            planner.decide(before, hit.decision.trigger, hit.decision.extra_tokens) == hit.decision
        )


def test_a_request_needs_a_user_message_last(app: Sessions) -> None:
    session_id = start(app)
    feed(app, session_id, [Message.user("Hi"), Message.assistant("Hello")])
    with pytest.raises(Exception, match="user message last"):
        app.prepare_request(session_id)


def test_tool_result_text_blocks_survive_a_round_trip(app: Sessions) -> None:
    session_id = start(app)
    call, _ = exchange(["x"])
    result = Message.user(
        ToolResultBlock(call.tool_uses[0].id, (TextBlock("part one"), TextBlock("part two")))
    )
    feed(app, session_id, [Message.user("go"), call, result])
    assert app.session(session_id).entries[-1].message == result


def test_the_window_defaults_to_the_models_and_can_be_overridden(app: Sessions) -> None:
    from abridged.domain.errors import InvalidSettingsError

    by_model = app.start_session(model="claude-sonnet-4-6", max_output_tokens=8_000)
    overridden = app.start_session(
        model="claude-sonnet-4-6", max_output_tokens=8_000, context_window=50_000
    )
    assert app.session(by_model).context_window == 200_000
    assert app.session(overridden).context_window == 50_000
    with pytest.raises(InvalidSettingsError, match="reserved output tokens"):
        app.start_session(model="m", max_output_tokens=60_000, context_window=50_000)
