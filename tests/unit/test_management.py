"""Managing sessions: metadata and tags, listing, totals, compactions, deletion."""

from __future__ import annotations

from collections import Counter
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st

from abridged.application.auditing import audit_session
from abridged.application.compactions import compaction_pages
from abridged.application.management import MAX_PAGE
from abridged.application.ports import ModelReply
from abridged.application.service import Sessions
from abridged.domain.errors import (
    InvalidMetadataError,
    SessionDeletedError,
    SessionError,
    UnknownSessionError,
)
from abridged.domain.messages import Message, Role
from abridged.domain.metadata import MAX_ENTRIES, MAX_KEY_LENGTH, checked_tags
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from abridged.domain.usage import Usage
from tests.conftest import MakeApp
from tests.support.builders import TOOLS, turn, words
from tests.support.fakes import FakeChatModel, FakeSummarizer, FakeTokenCounter


def start(app: Sessions, **kwargs: object) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=4_000,
        max_output_tokens=500,
        tools=TOOLS,
        settings=CompactionSettings(keep_recent_turns=2, threshold_floor_tokens=0),
        **kwargs,  # type: ignore[arg-type]
    )


def talk(app: Sessions, session_id: UUID, turns: int, size: int = 150) -> None:
    """Turns whose replies carry usage, preparing a request before each reply."""
    for i in range(turns):
        for message in turn(f"Request {i}: {words(size)}", [words(size)]):
            if message.role is Role.ASSISTANT:
                prepared = app.prepare_request(session_id)
                app.record_reply(
                    session_id,
                    message,
                    Usage(
                        input_tokens=100,
                        output_tokens=20,
                        cache_read_input_tokens=prepared.context.raw_estimate,
                        cache_creation_input_tokens=10,
                    ),
                    request_estimate=prepared.context.raw_estimate,
                )
            else:
                app.append_message(session_id, message)


def test_metadata_and_tags_are_recorded_and_listed_newest_first(app: Sessions) -> None:
    first = start(app, metadata={"user": "ada", "project": "parser"}, tags=["cli", "beta"])
    second = start(app, metadata={"user": "bob"}, tags=["cli"])
    third = start(app)

    page = app.list_sessions()

    assert [s.id for s in page.sessions] == [third, second, first]
    assert page.next_cursor is None
    assert page.sessions[2].metadata == {"user": "ada", "project": "parser"}
    assert page.sessions[2].tags == ("cli", "beta")
    assert page.sessions[0].metadata == {}
    assert app.session(first).metadata == {"user": "ada", "project": "parser"}
    assert app.session(first).tags == ["cli", "beta"]


def test_listing_filters_by_every_given_key_and_tag(app: Sessions) -> None:
    ada_cli = start(app, metadata={"user": "ada", "project": "parser"}, tags=["cli", "beta"])
    ada_web = start(app, metadata={"user": "ada"}, tags=["web"])
    start(app, metadata={"user": "bob"}, tags=["cli"])

    def ids(**filters: object) -> list[UUID]:
        return [s.id for s in app.list_sessions(**filters).sessions]  # type: ignore[arg-type]

    assert ids(metadata={"user": "ada"}) == [ada_web, ada_cli]
    assert ids(metadata={"user": "ada", "project": "parser"}) == [ada_cli]
    assert ids(metadata={"user": "ada"}, tags=["cli"]) == [ada_cli]
    assert ids(tags=["cli", "beta"]) == [ada_cli]
    assert ids(metadata={"user": "carol"}) == []


def test_pages_cover_every_session_once_newest_first(app: Sessions) -> None:
    started = [start(app, tags=["even" if i % 2 == 0 else "odd"]) for i in range(7)]

    seen: list[UUID] = []
    cursor = None
    while True:
        page = app.list_sessions(limit=3, cursor=cursor)
        assert len(page.sessions) <= 3
        seen += [s.id for s in page.sessions]
        cursor = page.next_cursor
        if cursor is None:
            break
    evens = app.list_sessions(tags=["even"], limit=2)
    rest = app.list_sessions(tags=["even"], limit=2, cursor=evens.next_cursor)

    assert seen == started[::-1]
    assert [s.id for s in evens.sessions + rest.sessions] == started[::2][::-1]
    assert rest.next_cursor is None


@pytest.mark.parametrize(
    "kwargs",
    [{"limit": 0}, {"limit": MAX_PAGE + 1}, {"cursor": "not-a-cursor"}, {"cursor": "-3"}],
)
def test_bad_list_arguments_are_typed_errors(app: Sessions, kwargs: dict[str, object]) -> None:
    with pytest.raises(SessionError):
        app.list_sessions(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("metadata", "tags"),
    [
        ({"user": 42}, ()),
        ({"": "x"}, ()),
        ({"k" * (MAX_KEY_LENGTH + 1): "x"}, ()),
        ({f"k{i}": "v" for i in range(MAX_ENTRIES + 1)}, ()),
        ({"user": "x" * 2_000}, ()),
        ({}, "one-string"),
        ({}, [""]),
        ({}, [7]),
    ],
)
def test_bad_metadata_or_tags_start_nothing(
    app: Sessions, metadata: dict[str, object], tags: object
) -> None:
    with pytest.raises(InvalidMetadataError):
        start(app, metadata=metadata, tags=tags)
    assert app.list_sessions().sessions == ()


@given(st.lists(st.text(min_size=1, max_size=20).filter(str.strip), max_size=30))
def test_tags_keep_their_first_order_without_duplicates(tags: list[str]) -> None:
    checked = checked_tags(tags)
    assert list(checked) == list(dict.fromkeys(tags))


def test_stats_sum_usage_compactions_and_estimate_error(app: Sessions) -> None:
    session_id = start(app)
    talk(app, session_id, turns=12)
    app.append_message(session_id, Message.user("And now?"))
    app.compact(session_id)

    stats = app.stats(session_id)
    events = app.history(session_id)

    replies = 12 * 2
    assert stats.messages == 12 * 4 + 1
    assert stats.user_messages == 12 * 2 + 1
    assert stats.assistant_messages == replies
    assert stats.requests == replies
    assert stats.input_tokens == 100 * replies
    assert stats.output_tokens == 20 * replies
    assert stats.cache_creation_input_tokens == 10 * replies
    assert stats.prompt_tokens == sum(
        e.usage.prompt_tokens
        for e in events
        if isinstance(e, Session.MessageAppended) and e.usage is not None
    )
    completed = [e for e in events if type(e).__name__ == "CompactionCompleted"]
    assert stats.compactions == len(completed) >= 2
    assert stats.compactions_by_trigger["manual"] == 1
    assert stats.compactions_by_trigger["threshold"] == len(completed) - 1
    # The provider always reports 110 tokens more than the raw estimate: calibration learns
    # it, so the error shrinks.
    assert stats.estimate_error_mean is not None
    assert stats.estimate_error_last is not None
    assert 0 <= abs(stats.estimate_error_last) < stats.estimate_error_mean
    assert stats.started_at <= stats.last_activity


def test_a_session_without_replies_has_no_estimate_error(app: Sessions) -> None:
    session_id = start(app)
    app.append_message(session_id, Message.user("Hello"))

    stats = app.stats(session_id)

    assert (stats.messages, stats.requests, stats.compactions) == (1, 0, 0)
    assert stats.estimate_error_mean is None


def test_compactions_say_what_when_why_and_the_summary(
    make_app: MakeApp, summarizer: FakeSummarizer
) -> None:
    app = make_app()
    session_id = start(app)
    talk(app, session_id, turns=12)
    app.append_message(session_id, Message.user("And now?"))
    app.compact(session_id, instructions="focus on the parser")

    records = app.compactions(session_id)

    assert len(records) >= 2
    assert [r.generation for r in records] == list(range(1, len(records) + 1))
    last = records[-1]
    assert last.trigger == "manual"
    assert records[0].trigger == "threshold"
    assert all(r.tokens_after < r.tokens_before for r in records)
    assert all(r.summary and r.summary in summarizer.text for r in records)
    assert all(r.reason for r in records)
    assert last.retained_from == app.session(session_id).retained_from
    assert last.last_position == last.retained_from - 1
    assert [r.at for r in records] == sorted(r.at for r in records)
    assert all(r.failure is None for r in records)


def test_a_failed_summary_is_a_compaction_with_its_failure(make_app: MakeApp) -> None:
    app = make_app(summarizer=FakeSummarizer(fail=100))
    session_id = start(app)
    talk(app, session_id, turns=10)

    records = app.compactions(session_id)

    assert records
    assert all(r.strategy == "truncate" and r.failure for r in records)
    assert all(r.fallback == "truncate" for r in records)
    assert app.stats(session_id).compaction_failures == len(records)


def test_every_reader_sees_the_same_compactions(make_app: MakeApp) -> None:
    """The service, the audit and the notification-log pages the read model stores read one
    projection: the same records, figure for figure, with the ledger each compaction left."""
    app = make_app(summarizer=FakeSummarizer(fail=1))
    session_id = start(app)
    other = start(app)
    talk(app, session_id, turns=10)
    talk(app, other, turns=6)
    app.compact(session_id)

    records = app.compactions(session_id)
    paged = [
        record
        for _, page in compaction_pages(app, after=0, page_size=3)
        for _, record in page
        if record.session_id == session_id
    ]

    assert len(records) >= 3
    assert audit_session(app, session_id).compactions == tuple(records) == tuple(paged)
    assert records[0].fallback == "truncate"
    assert records[0].failure
    assert all(r.fallback is None for r in records[1:])
    assert records[-1].trigger == "manual"
    updates = [e for e in app.history(session_id) if isinstance(e, Session.LedgerUpdated)]
    assert [(r.ledger_entries, r.ledger_tokens) for r in records] == [
        (u.count, u.tokens) for u in updates
    ]
    stats = app.stats(session_id)
    assert stats.compactions_by_trigger == dict(Counter(r.trigger for r in records))
    assert stats.summarizer_input_tokens == sum(r.summarizer_input_tokens for r in records)


def test_a_deleted_session_takes_no_commands_and_is_not_listed(make_app: MakeApp) -> None:
    app = make_app(chat_model=FakeChatModel())
    kept = start(app, tags=["t"])
    gone = start(app, tags=["t"])
    talk(app, gone, turns=2)
    events = len(app.history(gone))

    app.delete_session(gone, reason="the user asked")

    assert [s.id for s in app.list_sessions(tags=["t"]).sessions] == [kept]
    for command in (
        lambda: app.session(gone),
        lambda: app.append_message(gone, Message.user("Hi")),
        lambda: app.prepare_request(gone),
        lambda: app.complete(gone),
        lambda: app.stats(gone),
        lambda: app.compactions(gone),
        lambda: app.delete_session(gone),
        lambda: app.report_overflow(gone, 1_000),
    ):
        with pytest.raises(SessionDeletedError, match="the user asked"):
            command()
    history = app.history(gone)
    assert len(history) == events + 1
    assert type(history[-1]).__name__ == "Deleted"
    assert app.session(gone, version=events).message_count == 8
    assert isinstance(SessionDeletedError("x"), UnknownSessionError)


def test_deleting_needs_a_reason_and_a_known_session(app: Sessions) -> None:
    session_id = start(app)
    with pytest.raises(SessionError):
        app.delete_session(session_id, reason="  ")
    with pytest.raises(UnknownSessionError):
        app.delete_session(UUID(int=7))
    assert app.list_sessions().sessions[0].id == session_id


def test_complete_counts_as_a_request_in_the_stats(make_app: MakeApp) -> None:
    reply = ModelReply(
        Message.assistant("Sure."),
        Usage(input_tokens=5, output_tokens=3, cache_read_input_tokens=50),
        "claude-test",
    )
    app = make_app(chat_model=FakeChatModel([reply]))
    session_id = start(app)
    app.append_message(session_id, Message.user("Hello"))

    app.complete(session_id)

    stats = app.stats(session_id)
    assert (stats.requests, stats.cache_read_input_tokens, stats.output_tokens) == (1, 50, 3)


@given(
    st.lists(st.sets(st.sampled_from(["a", "b", "c"])), max_size=12),
    st.sets(st.sampled_from(["a", "b", "c"]), max_size=2),
    st.integers(min_value=1, max_value=5),
    st.sets(st.integers(min_value=0, max_value=11)),
)
def test_pages_list_each_matching_live_session_once_newest_first(
    tag_sets: list[set[str]], wanted: set[str], limit: int, deleted: set[int]
) -> None:
    app = Sessions(
        counter=FakeTokenCounter(),
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    ids = [start(app, tags=sorted(tags)) for tags in tag_sets]
    for index in deleted & set(range(len(ids))):
        app.delete_session(ids[index])

    listed: list[UUID] = []
    cursor = None
    while True:
        page = app.list_sessions(tags=sorted(wanted), limit=limit, cursor=cursor)
        assert len(page.sessions) <= limit
        listed += [s.id for s in page.sessions]
        if page.next_cursor is None:
            break
        assert len(page.sessions) == limit
        cursor = page.next_cursor

    expected = [
        session_id
        for index, session_id in enumerate(ids)
        if wanted <= tag_sets[index] and index not in deleted
    ]
    assert listed == expected[::-1]
