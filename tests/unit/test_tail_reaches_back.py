"""The recent tail inside a tool loop led by thinking (`tail_reaches_back`).

Inside an open tool loop of a conversation with thinking, a tail may start only before a
reply that starts with thinking (`abridged.domain.cuts.cut_points`); Claude Code's replies
think only now and then. The tail the rule wants (the most recent messages up to
`keep_recent_share` of the window) then often has no start of its own: it reaches back to the
start before it when that tail fits `retained_share`, instead of keeping the last call alone.
"""

from __future__ import annotations

from uuid import UUID

from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from abridged.domain.messages import Message, Role, ThinkingBlock, ToolResultBlock, ToolUseBlock
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from abridged.domain.tokens import message_tokens
from tests.support.builders import TOOLS, exchange, tool_id, words
from tests.support.fakes import FakeTokenCounter

COUNTER = FakeTokenCounter()
WINDOW = 32_000
RESERVE = 8_000


def thinking_step(output: str) -> tuple[Message, Message]:
    i = tool_id()
    return (
        Message.assistant(
            ThinkingBlock(f"Next I read {i}.", "sig-" + i), ToolUseBlock(i, "read_file", {})
        ),
        Message.user(ToolResultBlock(i, output)),
    )


def loop() -> list[Message]:
    """One prompt, then an open tool loop (its last result awaits the reply) that thinks at
    its first step and at the 6th and 2nd steps from its end: steps of about 450 tokens, so
    that the last thinking reply's tail (its last 2 steps) is well inside 8% of the window
    (2,560 tokens), the tail from the one before (6 steps, about 2,700) inside 15% (4,800),
    and the 3 steps before the last thinking reply fit the 8% with those after."""
    steps = 24
    messages: list[Message] = [Message.user("Port the loader; keep the public API.")]
    for step in range(steps):
        if step in (0, steps - 6, steps - 2):
            messages += thinking_step(words(420))
        else:
            messages += exchange([words(420)], name="read_file")
    return messages


def start(app: Sessions, **settings: object) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=WINDOW,
        max_output_tokens=RESERVE,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(**settings),  # type: ignore[arg-type]
    )


def compacted(app: Sessions, session_id: UUID, messages: list[Message]) -> None:
    """`messages` fed as a host would, then a compaction asked for before the reply."""
    for message in messages:
        if message.role is Role.ASSISTANT:
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
    app.compact(session_id)


def kept_from(app: Sessions, session_id: UUID) -> int:
    (hit, *_) = [
        e for e in app.history(session_id) if isinstance(e, Session.CompactionThresholdHit)
    ]
    return int(hit.decision.retained_from)


def starts_with_thinking(message: Message) -> bool:
    return message.role is Role.ASSISTANT and isinstance(message.content[0], ThinkingBlock)


def test_the_tail_reaches_back_to_the_thinking_reply_before_the_rules_reach(
    app: Sessions,
) -> None:
    session_id = start(app)
    history = loop()
    compacted(app, session_id, history)

    kept = kept_from(app, session_id)

    sizes = [message_tokens(m, COUNTER.count) for m in history]
    assert starts_with_thinking(history[kept])
    # Messages before the latest thinking reply fit the rule's 8% with everything after them,
    # so the tail reaches back past it, to the thinking reply before, within 15%.
    thinking = [k for k, m in enumerate(history) if starts_with_thinking(m)]
    assert kept == thinking[-2] < thinking[-1]
    assert sum(sizes[thinking[-1] - 2 :]) <= 0.08 * WINDOW
    assert sum(sizes[kept:]) <= 0.15 * WINDOW
    assert audit_session(app, session_id).ok


def test_without_it_the_tail_stops_at_the_last_thinking_reply_as_before(
    app: Sessions,
) -> None:
    session_id = start(app, tail_reaches_back=False)
    history = loop()
    compacted(app, session_id, history)

    thinking = [k for k, m in enumerate(history) if starts_with_thinking(m)]
    assert kept_from(app, session_id) == thinking[-1]
    assert audit_session(app, session_id).ok


def test_a_session_stored_before_the_setting_keeps_the_earlier_rule_and_fingerprint() -> None:
    stored = CompactionSettings().to_dict()
    del stored["tail_reaches_back"]

    settings = CompactionSettings.from_stored(stored)

    assert not settings.tail_reaches_back
    assert settings.fingerprint == CompactionSettings(tail_reaches_back=False).fingerprint
