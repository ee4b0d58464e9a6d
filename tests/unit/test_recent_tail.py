"""The working context a default compaction keeps: the recent tail first, the ledger after.

The rule (docs/settings.md#sharing-the-budget): a compaction keeps verbatim the most recent
messages up to `keep_recent_share` of the window, and the last `keep_recent_turns` turns
whole when they fit in `retained_share` of the window; the ledger and the summaries share
what is left, and the ledger gives way first.
"""

from __future__ import annotations

from uuid import UUID

import pytest

from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from abridged.domain import cuts
from abridged.domain.cuts import CURRENT_EXCHANGE
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from abridged.domain.tokens import message_tokens
from tests.support.builders import TOOLS, exchange, turn, words
from tests.support.checks import feed
from tests.support.fakes import FakeTokenCounter
from tests.support.outside_sessions import support_email_records

COUNTER = FakeTokenCounter()
WINDOW = 32_000
RESERVE = 8_000
DEFAULTS = CompactionSettings()


def start(app: Sessions) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=WINDOW,
        max_output_tokens=RESERVE,
        system="You are a careful coding agent.",
        tools=TOOLS,
    )


def expected_tail(history: list[Message]) -> int:
    """Where the rule says the verbatim tail starts in `history` (which ends with the user
    message the request answers)."""
    assert DEFAULTS.keep_recent_share is not None
    room = int(DEFAULTS.keep_recent_share * WINDOW)
    cap = int(DEFAULTS.retained_share * WINDOW)
    sizes = [message_tokens(m, COUNTER.count) for m in history]
    prompts = [k for k, m in enumerate(history) if m.is_user_prompt and k > 0]
    turns = prompts[-DEFAULTS.keep_recent_turns :] if DEFAULTS.keep_recent_turns else []
    if turns and sum(sizes[turns[0] :]) <= cap:
        room = max(room, sum(sizes[turns[0] :]))
    last = len(history) - 1 - (1 if history[-1].tool_results else 0)
    starts = [
        k
        for k in range(1, last + 1)
        if history[k].is_user_prompt or history[k].role is Role.ASSISTANT
    ]
    return next((k for k in starts if sum(sizes[k:]) <= room), starts[-1])


def sent_whole(request: list[Message], history: list[Message], start: int) -> bool:
    """Whether the request ends with `history[start:]`, each message as it was (the first
    may lead with the ledger and summary blocks)."""
    wanted = history[start:]
    if len(request) < len(wanted):
        return False
    tail = request[len(request) - len(wanted) :]
    first, *rest = tail
    n = len(wanted[0].content)
    return first.content[-n:] == wanted[0].content and rest == wanted[1:]


Seen = list[tuple[list[Message], list[Message], int]]


def replay(app: Sessions, messages: list[Message]) -> Seen:
    """Each compacted request with the history it was made from, and where the rule says
    its tail starts."""
    session_id = start(app)
    history: list[Message] = []
    seen: Seen = []
    for message in messages:
        if message.role is Role.ASSISTANT:
            prepared = app.prepare_request(session_id)
            if prepared.compaction is not None:
                seen.append(
                    (list(prepared.context.messages), list(history), expected_tail(history))
                )
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
        history.append(message)
    return seen


def chat(turns: int, output: int = 250) -> list[Message]:
    """Turns of a prompt, two tool exchanges of `output` tokens each, an answer."""
    messages: list[Message] = []
    for k in range(turns):
        messages += turn(f"Task {k}: {words(40)}", [words(output), words(output)], words(60))
    return messages


def agent(exchanges: int) -> list[Message]:
    """One long turn: a prompt, then tool exchanges of 700 tokens."""
    messages: list[Message] = [Message.user("Port the loader; never touch the migrations.")]
    for _ in range(exchanges):
        messages += exchange([words(700)], text=words(30))
    messages.append(Message.assistant("Done."))
    return messages


@pytest.mark.parametrize(
    "output",
    [
        250,
        # Two turns of about 3,100 tokens: more than the tail's own room (2,560), less than
        # `retained_share` of the window (4,800), so the room is raised to hold them.
        700,
    ],
)
def test_a_default_compaction_keeps_the_last_two_turns_verbatim(app: Sessions, output: int) -> None:
    messages = chat(40, output)
    compacted = replay(app, messages)

    assert compacted, "the session should have compacted"
    for request, history, start in compacted:
        assert sent_whole(request, history, start)
        # The last two turns, each from its prompt: the last prompt of the history is the
        # message the request answers, the one before it starts the turn before.
        prompts = [k for k, m in enumerate(history) if m.is_user_prompt]
        assert start <= prompts[-DEFAULTS.keep_recent_turns]
        assert sent_whole(request, history, prompts[-DEFAULTS.keep_recent_turns])


def test_a_default_compaction_inside_one_long_turn_keeps_the_recent_tokens(
    app: Sessions,
) -> None:
    messages = agent(60)
    compacted = replay(app, messages)

    assert compacted, "the session should have compacted"
    for request, history, start in compacted:
        assert sent_whole(request, history, start)
        # Several exchanges, not only the one in progress.
        assert sum(1 for m in request if m.tool_results) >= 3


def test_the_default_threshold_leaves_a_session_that_fits_whole(app: Sessions) -> None:
    # About a third of the window: the whole session is sent, nothing is summarized.
    messages = chat(14)
    assert sum(message_tokens(m, COUNTER.count) for m in messages) < WINDOW * 0.36

    assert replay(app, messages) == []


def test_a_default_compaction_keeps_the_last_two_turns_of_long_support_emails(
    app: Sessions,
) -> None:
    # A session of a shape the defaults were not tuned on (tests/support/outside_sessions):
    # prompts of 300 to 2,000 words, the rules stated once in the first, three calls each.
    records = support_email_records(seed=311, tickets=20)
    messages = [Message.from_wire(r) for r in records]
    compacted = replay(app, messages)

    assert compacted, "the session should have compacted"
    for request, history, start in compacted:
        assert sent_whole(request, history, start)
        prompts = [k for k, m in enumerate(history) if m.is_user_prompt]
        cap = int(DEFAULTS.retained_share * WINDOW)
        turns = prompts[-DEFAULTS.keep_recent_turns]
        if sum(message_tokens(m, COUNTER.count) for m in history[turns:]) <= cap:
            assert sent_whole(request, history, turns)


def large_steps(exchanges: int) -> list[Message]:
    """One turn whose every exchange (about 3,050 tokens, most of it the agent's own text,
    which no prune shortens) is larger than the tail's room at this window (2,560): no cut
    leaves a tail within the room."""
    messages: list[Message] = [Message.user("Find why the build fails; never edit CI files.")]
    for _ in range(exchanges):
        messages += exchange([words(100)], text=words(2_950))
    messages.append(Message.assistant("Found it."))
    return messages


def decisions(
    app: Sessions, messages: list[Message]
) -> tuple[UUID, list[Session.CompactionThresholdHit]]:
    session_id = start(app)
    feed(app, session_id, messages, COUNTER)
    hits = [e for e in app.history(session_id) if isinstance(e, Session.CompactionThresholdHit)]
    return session_id, hits


def test_a_tail_that_is_the_current_exchange_alone_is_named_for_the_rule(app: Sessions) -> None:
    # The rule keeps the exchange in progress whole when it alone is larger than the room:
    # the audit trail says so, and does not report a tail shortened below the rule.
    session_id, hits = decisions(app, large_steps(12))

    assert hits, "the session should have compacted"
    for hit in hits:
        assert hit.decision.reason == CURRENT_EXCHANGE
        assert hit.decision.turns_kept == 0
    assert audit_session(app, session_id).ok


def test_the_current_exchange_larger_than_the_room_is_sent_whole(app: Sessions) -> None:
    compacted = replay(app, large_steps(12))

    assert compacted
    for request, history, start in compacted:
        # The exchange in progress: the call and its results, each as it was.
        assert start == len(history) - 2
        assert sent_whole(request, history, start)


def test_an_audit_accepts_the_reason_recorded_before_the_current_exchange_was_named(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Sessions stored before the reason existed recorded `minimal tail` for the same cut.
    with monkeypatch.context() as patch:
        patch.setattr(cuts, "CURRENT_EXCHANGE", "minimal tail")
        session_id, hits = decisions(app, large_steps(12))
    assert hits
    assert {hit.decision.reason for hit in hits} == {"minimal tail"}

    assert audit_session(app, session_id).ok


def test_an_audit_still_refuses_a_reason_that_names_another_rule(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The alias covers the one renamed reason, not any label.
    with monkeypatch.context() as patch:
        patch.setattr(cuts, "CURRENT_EXCHANGE", "recent tokens")
        session_id, _ = decisions(app, large_steps(12))

    assert not audit_session(app, session_id).ok


def start_beside(app: Sessions, system: str, **settings: object) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=WINDOW,
        max_output_tokens=RESERVE,
        system=system,
        tools=TOOLS,
        settings=CompactionSettings(**settings),  # type: ignore[arg-type]
    )


def test_a_long_system_prompt_alone_past_the_threshold_leaves_the_first_turns_whole(
    app: Sessions,
) -> None:
    # Half the window is system prompt: every request is past the threshold (40%) from the
    # first. The first turns fit in the tail's room, so a compaction has nothing outside the
    # rule to summarize; it used to summarize the prompt of the turn in progress, 0 turns
    # kept, for a context a few tokens larger than before.
    session_id = start_beside(app, words(WINDOW // 2))
    messages = chat(4)
    feed(app, session_id, messages, COUNTER)

    hits = [e for e in app.history(session_id) if isinstance(e, Session.CompactionThresholdHit)]
    assert hits, "the session should compact once its turns outgrow the tail's room"
    for hit in hits:
        assert hit.decision.turns_kept >= DEFAULTS.keep_recent_turns
    completed = [e for e in app.history(session_id) if isinstance(e, Session.CompactionCompleted)]
    assert all(c.tokens_after < c.tokens_before for c in completed)
    assert audit_session(app, session_id).ok


def test_a_session_stored_before_spare_recent_tail_is_decided_and_audited_as_before(
    app: Sessions,
) -> None:
    stored = CompactionSettings().to_dict()
    del stored["spare_recent_tail"]
    assert not CompactionSettings.from_stored(stored).spare_recent_tail
    assert (
        CompactionSettings.from_stored(stored).fingerprint
        == CompactionSettings(spare_recent_tail=False).fingerprint
    )

    session_id = start_beside(app, words(WINDOW // 2), spare_recent_tail=False)
    feed(app, session_id, chat(4), COUNTER)

    hits = [e for e in app.history(session_id) if isinstance(e, Session.CompactionThresholdHit)]
    assert hits[0].decision.turns_kept == 0
    assert audit_session(app, session_id).ok
