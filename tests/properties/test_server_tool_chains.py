"""Chains of paused server-tool replies, held over generated turns.

No cut falls inside such a chain, however long it grows (docs/content.md#never-stuck):
every request is valid and in budget, a reply is refused (nothing written) only when the
chain could not be sent even at its smallest, another prepare writes nothing new, and
replaying the events gives the live state.
"""

from __future__ import annotations

from uuid import UUID

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from abridged.domain.errors import ContextTooSmallError
from abridged.domain.messages import (
    Message,
    Role,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireBlock,
)
from abridged.domain.settings import CompactionSettings
from tests.properties.strategies import SERVER_TOOLS, TOOLS, paused_chains
from tests.support.builders import web_fetch, web_fetched
from tests.support.checks import check_request, stored_version
from tests.support.counting import MemoCounter

COUNTER = MemoCounter(TiktokenCounter())

PROPERTY = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def checked(app: Sessions, session_id: UUID) -> None:
    prepared = app.prepare_request(session_id)
    check_request(prepared, COUNTER, app.session(session_id).calibration)


# Compacted at a 4k window beside a long system prompt, the request stays above the
# threshold: the loop guard that holds the next compaction back is recorded with the
# compaction, not by the next prepare (which then wrote a `CompactionSuppressed`).
STILL_ABOVE = [
    Message.user("0"),
    Message.assistant(WireBlock.of(web_fetch(1))),
    Message.assistant(WireBlock.of(web_fetched(1, 1)), TextBlock("0")),
    Message.user("0"),
    Message.assistant(
        WireBlock.of(web_fetch(2)), ToolUseBlock("toolu_00003", "read_file", {"path": "0:0:0\x0b"})
    ),
    Message(Role.USER, (ToolResultBlock("toolu_00003", " ".join(["token"] * 63)),)),
    Message.assistant(WireBlock.of(web_fetched(2, 1)), TextBlock(":0:0:0:")),
]


@PROPERTY
@example(STILL_ABOVE, 4_000, "claude-opus-4-8", 0.0, True)
@given(
    paused_chains(),
    st.sampled_from([4_000, 8_000, 16_000, 32_000]),
    st.sampled_from(["claude-opus-4-8", "claude-fable-5-1"]),
    st.sampled_from([0.0, 0.1]),
    st.booleans(),
)
def test_a_chain_of_paused_replies_never_leaves_the_session_stuck(
    messages: list[Message], window: int, model: str, ledger_share: float, long_system: bool
) -> None:
    app = Sessions(
        counter=COUNTER,
        summarizer=ExtractiveSummarizer(COUNTER),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model=model,
        context_window=window,
        max_output_tokens=window // 8,
        system="You are a research agent." + " Cite every source." * (200 if long_system else 0),
        tools=(*TOOLS, *SERVER_TOOLS),
        settings=CompactionSettings(ledger_share=ledger_share),
    )
    for message in [*messages, Message.user("And now?")]:
        if message.role is Role.USER:
            app.append_message(session_id, message)
            continue
        # Never ContextOverflowError: what was accepted can be sent.
        checked(app, session_id)
        before = stored_version(app, session_id)
        try:
            app.record_reply(session_id, message)
        except ContextTooSmallError:
            # Only what can never be reduced (thinking, server calls) outgrew the budget:
            # nothing is written, and the turn can still be continued from before it.
            assert stored_version(app, session_id) == before
            break
    checked(app, session_id)

    # Prepared again without a new message: nothing more is decided or written.
    version = stored_version(app, session_id)
    checked(app, session_id)
    assert stored_version(app, session_id) == version

    assert audit_session(app, session_id).ok
    replayed = None
    for event in app.history(session_id):
        replayed = event.mutate(replayed)
    live = app.session(session_id)
    assert replayed is not None
    for name, value in live.__dict__.items():
        if name != "_pending_events":
            assert getattr(replayed, name) == value, name
