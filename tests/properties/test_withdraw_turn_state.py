"""A withdrawn turn leaves the state a session that never had it holds.

Over generated conversations, after a turn whose only events were its own messages is
withdrawn, every attribute of the session's state (the loop guards, the thinking it has
seen, the queued system messages, the per-turn content, ...) equals that of a twin session
fed the same messages without the turn: the next decisions (prunes, compactions, the
guards that hold a compaction back) are the twin's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.properties.strategies import conversations
from tests.properties.test_invariants import PROPERTY, knobs, prepare, windows
from tests.properties.test_withdraw_turn import MODELS, feed, started, turns
from tests.support.checks import stored_version

OWN = {
    "entry_versions",
    "counted_system_tokens",
    "_id",
    "_version",
    "_created_on",
    "_modified_on",
    "_pending_events",
}
"""What names the events that hold the state (versions, ids, times), and a cache of a sum
(`system_message_tokens`, compared instead)."""


NAMES = (
    "queued_system",
    "instructed_tools",
    "instructed_system",
    "carried_system",
    "thinking_producers",
    "turn_context",
    "turn_context_tokens",
    "system_message_tokens",
    "first_thinking_at",
)
"""Attributes that are class defaults until an event sets them, and a derived sum."""


def state_of(session: Session) -> dict[str, Any]:
    state = {k: v for k, v in vars(session).items() if k not in OWN}
    state.update({name: getattr(session, name) for name in NAMES})
    # A sequence is a list or a tuple (a class default) alike.
    return {
        k: list(v) if isinstance(v, Sequence) and not isinstance(v, str) else v
        for k, v in {
            **state,
            "entries": session.entries,
            "shown_messages": session.shown_messages,
        }.items()
    }


@PROPERTY
@given(conversations(max_turns=4), windows, knobs, MODELS, st.data())
def test_a_withdrawn_turn_leaves_the_state_of_a_session_that_never_had_it(
    messages: list[Message],
    window: tuple[int, int],
    knob: CompactionSettings,
    model: str,
    data: st.DataObject,
) -> None:
    cut = turns(messages)
    k = data.draw(st.integers(1, max(1, len(cut) - 1)), label="turn") if len(cut) > 1 else 0
    before, turn = [m for t in cut[:k] for m in t], cut[k]
    app, session_id = started(model, window, knob)
    feed(app, session_id, before)
    mark = stored_version(app, session_id)
    twin_state = state_of(app.session(session_id))
    feed(app, session_id, turn)
    if turn[-1].role is Role.USER:
        prepare(app, session_id)
    recorded = [e for e in app.history(session_id) if e.originator_version > mark]
    if not all(isinstance(e, Session.MessageAppended) for e in recorded):
        return
    app.withdraw_turn(session_id, position=len(before), reason="refused")
    withdrawn = state_of(app.session(session_id))
    assert {k: v for k, v in withdrawn.items() if v != twin_state.get(k)} == {
        k: v for k, v in twin_state.items() if v != withdrawn.get(k)
    }
