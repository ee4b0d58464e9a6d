"""Notices for a host's UI: whether the context is full or summarized, what just happened to
it, and where its tokens go."""

from __future__ import annotations

from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.application.notices import Notice
from abridged.application.ports import Summary
from abridged.application.service import Sessions
from abridged.domain.messages import Message, Role
from abridged.domain.settings import CompactionSettings
from tests.conftest import MakeApp
from tests.support.builders import TOOLS, exchange, turn, words
from tests.support.fakes import FakeSummarizer, FakeTokenCounter


def start(app: Sessions, **settings: object) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=4_000,
        max_output_tokens=500,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(**settings),  # type: ignore[arg-type]
    )


def step(app: Sessions, session_id: UUID, i: int, output: str, seen: list[Notice]) -> list[str]:
    """One turn; returns the context status of each request prepared in it."""
    statuses: list[str] = []
    for message in turn(f"Request {i}: {words(150)}", [output]):
        if message.role is Role.ASSISTANT:
            prepared = app.prepare_request(session_id, on_notice=seen.append)
            statuses.append(prepared.context_status)
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
    return statuses


class RecordingSummarizer(FakeSummarizer):
    """Remembers which notices a UI had seen when the summary was being written."""

    def __init__(self, seen: list[Notice]) -> None:
        super().__init__("Summary of the earlier turns.")
        self.seen = seen
        self.seen_while_writing: list[list[str]] = []

    def summarize(self, messages, *, max_tokens, instructions=None, session_model=None) -> Summary:  # type: ignore[no-untyped-def]
        self.seen_while_writing.append([n.kind for n in self.seen])
        return super().summarize(messages, max_tokens=max_tokens)


def test_the_status_turns_summarized_and_compaction_is_announced_before_it_runs(
    make_app: MakeApp,
) -> None:
    seen: list[Notice] = []
    summarizer = RecordingSummarizer(seen)
    app = make_app(summarizer=summarizer)
    session_id = start(
        app, keep_recent_turns=2, threshold_floor_tokens=0, tool_output_mode="keep_all"
    )

    statuses: list[str] = []
    for i in range(12):
        statuses += step(app, session_id, i, words(150), seen)

    assert statuses[0] == "full"
    assert statuses[-1] == "summarized"
    flip = statuses.index("summarized")
    assert set(statuses[:flip]) == {"full"}
    kinds = [n.kind for n in seen]
    start_at = kinds.index("compaction_started")
    assert kinds[start_at + 1] == "compaction_completed"
    assert summarizer.seen_while_writing[0][-1] == "compaction_started"
    completed = seen[start_at + 1]
    assert completed.tokens_after is not None
    assert completed.tokens_before is not None
    assert completed.tokens_after < completed.tokens_before
    assert completed.breakdown is not None
    assert completed.breakdown.summary > 0


def test_a_prepared_request_carries_its_own_notices_and_breakdown(make_app: MakeApp) -> None:
    app = make_app()
    session_id = start(app, keep_recent_turns=2, threshold_floor_tokens=0)
    for i in range(10):
        for message in turn(f"Request {i}: {words(150)}", [words(150)]):
            if message.role is Role.ASSISTANT:
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
    app.append_message(session_id, Message.user("And now?"))

    prepared = app.prepare_request(session_id)

    assert "compaction_completed" in [n.kind for n in prepared.notices]
    assert prepared.context_status == "summarized"
    parts = prepared.breakdown
    assert parts is not None
    assert parts.total == prepared.context.raw_estimate
    assert parts.estimate == prepared.context.estimate
    assert parts.budget == prepared.context.budget
    assert parts.summary == sum(c.tokens for c in prepared.context.summaries) > 0
    assert parts.summary_chunks == len(prepared.context.summaries)
    session = app.session(session_id)
    assert parts.ledger == session.ledger_tokens > 0
    assert parts.generation == session.generation
    assert parts.kept_messages == len(session.entries)
    assert parts.system > 0
    assert parts.tools > 0
    assert parts.messages > 0
    again = app.prepare_request(session_id)
    assert again.notices == ()
    assert again.context_status == "summarized"


def test_pruning_old_outputs_is_a_notice(make_app: MakeApp) -> None:
    seen: list[Notice] = []
    app = make_app()
    session_id = app.start_session(
        model="claude-test",
        context_window=20_000,
        max_output_tokens=2_000,
        tools=TOOLS,
        settings=CompactionSettings(
            prune_protect_share=0.1, prune_min_share=0.01, whole_until_threshold=False
        ),
    )
    app.append_message(session_id, Message.user("Audit every module."))

    for i in range(16):
        prepared = app.prepare_request(session_id, on_notice=seen.append)
        assert [n.kind for n in prepared.notices] == [
            n.kind for n in seen[len(seen) - len(prepared.notices) :]
        ]
        call, result = exchange([f"module {i}\n" + words(300)], name="read_file")
        app.record_reply(session_id, call)
        app.append_message(session_id, result)

    pruned = [n for n in seen if n.kind == "pruned"]
    assert pruned
    for notice in pruned:
        assert notice.tokens_before is not None
        assert notice.tokens_after is not None
        assert notice.tokens_after < notice.tokens_before
    assert app.prepare_request(session_id).context_status == "full"


def test_a_failed_summary_is_announced(make_app: MakeApp) -> None:
    seen: list[Notice] = []
    app = make_app(summarizer=FakeSummarizer(fail=100))
    session_id = start(
        app, keep_recent_turns=2, threshold_floor_tokens=0, tool_output_mode="keep_all"
    )
    for i in range(12):
        step(app, session_id, i, words(150), seen)

    assert "compaction_failed" in [n.kind for n in seen]


@settings(max_examples=25)
@given(st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=14))
def test_status_and_breakdown_agree_with_the_history(sizes: list[int]) -> None:
    app = Sessions(
        counter=FakeTokenCounter(),
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = start(app, keep_recent_turns=2, threshold_floor_tokens=0)
    for i, size in enumerate(sizes):
        app.append_message(session_id, Message.user(f"Request {i}: {words(size)}"))
        prepared = app.prepare_request(session_id)
        compacted = any(type(e).__name__ == "CompactionCompleted" for e in app.history(session_id))
        assert prepared.context_status == ("summarized" if compacted else "full")
        parts = prepared.breakdown
        assert parts is not None
        assert parts.total == prepared.context.raw_estimate
        assert parts.estimate == prepared.context.estimate <= parts.budget
        app.record_reply(session_id, Message.assistant(f"Answer {i}"))
