"""Over generated tool loops with thinking, prunes and compactions, with per-turn content that
changes (or not) from request to request, on a model that binds thinking to its prefix: no
request is refused, every open loop keeps its thinking, the audit re-derives everything, and
the state a replay of the events builds is the live one."""

from __future__ import annotations

from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st

from abridged.application.service import Sessions
from abridged.domain.context import build_context
from abridged.domain.messages import Message
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.properties.strategies import TOOLS, conversations
from tests.properties.test_invariants import COUNTER, PROPERTY, knobs, windows
from tests.support.bound_replay import replay_bound

contents = st.lists(
    st.sampled_from(
        [
            None,
            "",
            "Today is Monday.",
            "Today is Tuesday.",
            "Open files: src/parser.py, src/lexer.py, tests/test_parser.py",
            "Ünïcode reminder 🧪: run the tests before you answer.",
        ]
    ),
    min_size=1,
    max_size=8,
)


class Cycling:
    """The host's content: the drawn texts, one per request, round and round."""

    def __init__(self, texts: list[str | None]) -> None:
        self.texts = texts
        self.calls = 0

    def content(self, session_id: UUID) -> str | None:
        self.calls += 1
        return self.texts[(self.calls - 1) % len(self.texts)]


def replayed(app: Sessions, session_id: UUID) -> Session:
    state = None
    for event in app.history(session_id):
        state = event.mutate(state)
    assert isinstance(state, Session)
    return state


def assert_replay_is_live(app: Sessions, session_id: UUID) -> None:
    live, again = app.session(session_id), replayed(app, session_id)
    assert [tuple(c) for c in again.turn_context] == [tuple(c) for c in live.turn_context]
    assert again.turn_context_tokens == live.turn_context_tokens
    assert again.turn_context_tokens == sum(c[2] for c in live.turn_context)
    assert [tuple(p) for p in again.thinking_producers] == [
        tuple(p) for p in live.thinking_producers
    ]
    assert again.raw_estimate() == live.raw_estimate()
    if live.awaiting_reply:
        assert build_context(again) == build_context(live)


@PROPERTY
@given(conversations(), windows, knobs, contents)
def test_changing_per_turn_content_is_never_refused_and_replays_to_the_live_state(
    messages: list[Message],
    window: tuple[int, int],
    knob: CompactionSettings,
    texts: list[str | None],
) -> None:
    replay = replay_bound(
        COUNTER,
        messages,
        system="You are an agent. Ünïcode 🧪.",
        tools=TOOLS,
        window=window[0],
        settings=knob,
        audit=True,
        context_provider=Cycling(texts),
        inspect=assert_replay_is_live,
    )
    assert [v for v in replay.violations if v.rule == "thinking-prefix-changed"] == []
    assert replay.required_missing == 0
    assert replay.audit_mismatches == ()
