"""Over generated tool loops with thinking, prunes, compactions and a host reconfiguring the
session mid-way: a model that binds thinking to its prefix refuses none of the requests."""

from __future__ import annotations

from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st

from abridged.application.service import Sessions
from abridged.domain.errors import SessionError
from abridged.domain.messages import Message
from abridged.domain.settings import CompactionSettings
from tests.properties.strategies import TOOLS, conversations
from tests.properties.test_invariants import COUNTER, PROPERTY, knobs, windows
from tests.support.bound_replay import replay_bound


def reconfiguring(at: int | None, tools: bool) -> object:
    def between(app: Sessions, session_id: UUID, step: int) -> None:
        if step != at:
            return
        try:
            if tools:
                app.reconfigure(session_id, tools=[*TOOLS, {**TOOLS[0], "name": "lint"}])
            else:
                app.reconfigure(session_id, system="You are an agent. Be brief now.")
        except SessionError:
            pass  # a change the session refuses (too large for the window) records nothing

    return between


@PROPERTY
@given(
    conversations(),
    windows,
    knobs,
    st.none() | st.integers(0, 40),
    st.booleans(),
)
def test_no_request_is_refused_for_a_thinking_block_whose_prefix_changed(
    messages: list[Message],
    window: tuple[int, int],
    knob: CompactionSettings,
    reconfigure_at: int | None,
    tools: bool,
) -> None:
    replay = replay_bound(
        COUNTER,
        messages,
        system="You are an agent. Ünïcode 🧪.",
        tools=TOOLS,
        window=window[0],
        settings=knob,
        audit=True,
        between=reconfiguring(reconfigure_at, tools),  # type: ignore[arg-type]
    )
    assert [v for v in replay.violations if v.rule == "thinking-prefix-changed"] == []
    assert replay.required_missing == 0
    assert replay.audit_mismatches == ()
