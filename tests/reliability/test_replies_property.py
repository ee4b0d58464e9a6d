"""Any reply the provider may return, whole, cut short or empty, is either recorded and
followed by a valid request, or refused with a typed error and not recorded."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from abridged.adapters.anthropic.request import render_request
from abridged.application.service import Sessions
from abridged.domain.errors import InvalidMessageError
from abridged.domain.messages import (
    Block,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from tests.support.anthropic_rules import violations
from tests.support.builders import TOOLS
from tests.support.checks import recount
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

blocks: st.SearchStrategy[Block] = st.one_of(
    st.builds(TextBlock, st.sampled_from(["", " ", "Done.", "Looking at the parser now."])),
    st.builds(
        ThinkingBlock,
        st.sampled_from(["Let me", "Consider the tests"]),
        st.sampled_from(["", "sig"]),
    ),
    st.builds(RedactedThinkingBlock, st.just("ZW5jcnlwdGVk")),
    st.builds(
        ToolUseBlock,
        st.uuids().map(lambda u: f"toolu_{u.hex[:12]}"),
        st.just("run_command"),
        st.just({"command": "pytest"}),
    ),
)


@given(st.lists(blocks, max_size=5))
def test_a_reply_is_recorded_and_followed_by_a_valid_request_or_refused(
    content: list[Block],
) -> None:
    counter = FakeTokenCounter()
    app = Sessions(
        counter=counter,
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model="claude-test", context_window=20_000, max_output_tokens=1_000, tools=TOOLS
    )
    app.append_message(session_id, Message.user("Fix the parser."))
    reply = Message.assistant(*content)
    before = len(app.history(session_id))

    try:
        app.record_reply(session_id, reply)
    except InvalidMessageError:
        assert len(app.history(session_id)) == before
        return

    assert app.session(session_id).entries[-1].message == reply
    uses = reply.tool_uses
    app.append_message(
        session_id,
        Message.user(*(ToolResultBlock(u.id, "ok") for u in uses))
        if uses
        else Message.user("Go on."),
    )
    prepared = app.prepare_request(session_id)
    body = render_request(prepared.context, model=prepared.model, max_tokens=prepared.max_tokens)
    assert violations(body) == []
    assert prepared.context.estimate >= recount(body, counter)
