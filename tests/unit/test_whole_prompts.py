"""A prompt a request can hold is shown whole (`whole_prompts`): a user who pastes a log and
asks about it gets all of it in the request that answers. When the context must shrink the
prompt is reduced to one message's cap (half the room) before a compaction would summarize
it, and thinking bound to what came before it leaves the view with it. Sessions stored
before keep the earlier rule."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from abridged.adapters.anthropic.request import render_request
from abridged.application.auditing import audit_events
from abridged.application.fitting import PROMPT_REASON
from abridged.application.ports import RequestOptions
from abridged.application.service import Sessions
from abridged.domain.degradation import message_cap, message_room
from abridged.domain.messages import Message, Role, ThinkingBlock
from abridged.domain.session import Session
from abridged.domain.settings import ADDED_SETTINGS, CompactionSettings
from abridged.domain.tokens import MESSAGE_OVERHEAD
from tests.support.anthropic_rules import violations
from tests.support.builders import TOOLS, exchange, thinking_exchange, words
from tests.support.fakes import FakeSummarizer, FakeTokenCounter
from tests.support.thinking_binding import sign_reply

COUNTER = FakeTokenCounter()
BOUND = "claude-fable-5-1"
UNBOUND = "claude-sonnet-4-5"
THINKING = RequestOptions(thinking={"type": "adaptive"})
MANUAL = RequestOptions(thinking={"type": "enabled", "budget_tokens": 1_024})
LINE_TOKENS = 7
"""What one line of `pasted_log` counts: six words and its line break."""
TRACEBACK = "ValueError: bad row 17 in customers.csv"


def pasted_log(tokens: int) -> str:
    """A prompt with a log of about `tokens` tokens, a traceback in its middle."""
    lines = tokens // LINE_TOKENS
    rows = [f"2026-11-27 10:{k % 60:02d}:00 INFO worker-{k} done" for k in range(lines)]
    rows[lines // 2 : lines // 2] = [
        "Traceback (most recent call last):",
        '  File "/srv/app/jobs/import_rows.py", line 88, in run',
        TRACEBACK,
    ]
    return "Why does the import job fail? Here is the log:\n" + "\n".join(rows)


def service() -> Sessions:
    return Sessions(
        counter=COUNTER,
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )


def start(app: Sessions, model: str = "claude-test", **settings: Any) -> UUID:
    return app.start_session(
        model=model,
        context_window=6_000,
        max_output_tokens=500,
        system="You are a careful agent.",
        tools=TOOLS,
        settings=CompactionSettings(
            **{"threshold_floor_tokens": 0, "threshold_ratio": 0.5, **settings}
        ),
    )


def room_and_cap(app: Sessions, session_id: UUID) -> tuple[int, int]:
    session = app.session(session_id)
    room = message_room(session.limits, session.system_tokens, session.tools_tokens)
    return room, message_cap(session.limits, session.system_tokens, session.tools_tokens)


def prompt_shown(messages: list[dict[str, Any]]) -> str:
    """The text of the pasted prompt as a request shows it."""
    for message in messages:
        for block in message["content"]:
            if block.get("type") == "text" and block["text"].startswith("Why does the import"):
                return str(block["text"])
    raise AssertionError("the prompt is not in the request")


def body_of(app: Sessions, session_id: UUID, model: str) -> dict[str, Any]:
    prepared = app.prepare_request(session_id)
    assert prepared.context.estimate <= prepared.context.budget
    if model == UNBOUND:  # adaptive thinking is for the models from Opus 4.6 on
        return render_request(prepared.context, model=model, max_tokens=2_048, options=MANUAL)
    return render_request(prepared.context, model=model, max_tokens=500, options=THINKING)


def reshown(app: Sessions, session_id: UUID) -> list[Session.MessagesReshown]:
    return [e for e in app.history(session_id) if isinstance(e, Session.MessagesReshown)]


def test_a_prompt_the_request_can_hold_is_shown_whole_in_its_first_request() -> None:
    app = service()
    session_id = start(app)
    room, cap = room_and_cap(app, session_id)
    prompt = pasted_log(int(room * 0.8))
    assert cap < MESSAGE_OVERHEAD + COUNTER.count(prompt) <= room  # more than half the room

    app.append_message(session_id, Message.user(prompt))
    body = body_of(app, session_id, "claude-test")

    assert prompt_shown(body["messages"]) == prompt
    appended = app.history(session_id)[-1]
    assert isinstance(appended, Session.MessageAppended)
    assert not appended.truncations
    # The earlier rule cut it to half the room, its traceback kept among the salient lines.
    earlier = service()
    old = start(earlier, whole_prompts=False)
    earlier.append_message(old, Message.user(prompt))
    cut = prompt_shown(body_of(earlier, old, "claude-test")["messages"])
    assert "characters of this message truncated" in cut
    assert TRACEBACK in cut


def test_a_prompt_the_request_cannot_hold_is_cut_to_the_cap_as_before() -> None:
    app = service()
    session_id = start(app)
    room, _ = room_and_cap(app, session_id)
    prompt = pasted_log(int(room * 1.5))
    earlier = service()
    old = start(earlier, whole_prompts=False)

    app.append_message(session_id, Message.user(prompt))
    earlier.append_message(old, Message.user(prompt))

    assert (
        body_of(app, session_id, "claude-test")["messages"]
        == (body_of(earlier, old, "claude-test")["messages"])
    )


def test_the_prompt_is_reduced_to_the_cap_before_a_compaction_would_summarize_it() -> None:
    # Whole, the prompt and the first tool call are past the threshold: the compaction due
    # would summarize the prompt. Reduced to the cap, as earlier versions showed it, they are
    # not: the prompt stays in view, its traceback kept, and nothing is compacted.
    app = service()
    session_id = start(app)
    room, cap = room_and_cap(app, session_id)
    prompt = pasted_log(int(room * 0.75))
    app.append_message(session_id, Message.user(prompt))
    first = body_of(app, session_id, "claude-test")
    call, result = exchange([words(40)])
    app.record_reply(session_id, call)
    app.append_message(session_id, result)

    prepared = app.prepare_request(session_id)
    body = render_request(prepared.context, model="claude-test", max_tokens=500)

    assert prompt_shown(first["messages"]) == prompt
    shown = prompt_shown(body["messages"])
    assert "characters of this message truncated" in shown
    assert TRACEBACK in shown
    assert prepared.compaction is None
    assert violations(body) == []
    [event] = reshown(app, session_id)
    assert event.reason == PROMPT_REASON
    assert event.cap == cap
    assert [m.position for m in event.messages] == [0]
    assert app.session(session_id).entries[0].shown_tokens <= cap
    # From here on the session is what earlier versions made of the same messages.
    earlier = service()
    old = start(earlier, whole_prompts=False)
    earlier.append_message(old, Message.user(prompt))
    earlier.prepare_request(old)
    earlier.record_reply(old, call)
    earlier.append_message(old, result)
    assert body["messages"] == body_of(earlier, old, "claude-test")["messages"]
    assert all(f.matches for f in audit_events(app.history(session_id)).findings)


def test_a_compaction_that_keeps_the_prompt_keeps_it_whole() -> None:
    app = service()
    # A tail that holds the prompt, not the turns before it.
    session_id = start(app, keep_recent_share=0.65, retained_share=0.65)
    for k in range(3):
        app.append_message(session_id, Message.user(f"Task {k}: {words(200)}"))
        app.prepare_request(session_id)
        app.record_reply(session_id, Message.assistant(f"Done {k}. {words(200)}"))
    room, _ = room_and_cap(app, session_id)
    prompt = pasted_log(int(room * 0.75))
    app.append_message(session_id, Message.user(prompt))

    prepared = app.prepare_request(session_id)

    assert prepared.compaction is not None
    body = render_request(prepared.context, model="claude-test", max_tokens=500)
    assert prompt_shown(body["messages"]) == prompt
    assert reshown(app, session_id) == []


def loop_step(app: Sessions, session_id: UUID, model: str, output: str) -> dict[str, Any]:
    """One request of a tool loop led by thinking: the body sent, then the reply (its thinking
    signed over that body, or left out when the request went with thinking off) and the
    result recorded."""
    body = body_of(app, session_id, model)
    call, result = thinking_exchange(output)
    content = list(call.to_wire()["content"])
    if "thinking" in body:
        content = sign_reply(body, content)
    else:
        content = [b for b in content if b["type"] != "thinking"]
    app.record_reply(session_id, {"role": "assistant", "content": content})
    app.append_message(session_id, result)
    return body


def thinking_sent(body: dict[str, Any]) -> int:
    return sum(
        1
        for m in body["messages"]
        if m["role"] == Role.ASSISTANT.value
        for b in m["content"]
        if b["type"] == "thinking"
    )


def test_with_bound_thinking_the_prompt_stays_whole_while_the_open_loop_fits() -> None:
    app = service()
    session_id = start(app, model=BOUND)
    room, _ = room_and_cap(app, session_id)
    prompt = pasted_log(int(room * 0.75))
    app.append_message(session_id, Message.user(prompt))

    first = loop_step(app, session_id, BOUND, words(40))
    body = body_of(app, session_id, BOUND)

    # Past the threshold, but the loop's thinking is bound to the prompt as it was shown.
    assert app.session(session_id).estimate() >= app.session(session_id).limits.threshold
    assert prompt_shown(first["messages"]) == prompt_shown(body["messages"]) == prompt
    assert thinking_sent(body) == 1
    assert violations(body) == []
    assert reshown(app, session_id) == []


def test_with_bound_thinking_a_loop_that_no_longer_holds_the_prompt_pauses_thinking() -> None:
    app = service()
    session_id = start(app, model=BOUND, tool_output_share=0.5)
    room, _ = room_and_cap(app, session_id)
    prompt = pasted_log(int(room * 0.9))
    app.append_message(session_id, Message.user(prompt))
    loop_step(app, session_id, BOUND, words(40))
    whole = loop_step(app, session_id, BOUND, words(int(room * 0.4)))
    # The result just recorded leaves no request room for the whole prompt: the prompt is
    # reduced, which changes what the loop's thinking was produced under.
    reduced = loop_step(app, session_id, BOUND, words(40))
    after = body_of(app, session_id, BOUND)

    assert prompt_shown(whole["messages"]) == prompt
    assert thinking_sent(whole) == 1
    assert [e.reason for e in reshown(app, session_id)] == [PROMPT_REASON]
    # The loop's thinking no longer holds the prefix back once the prompt is reduced: the
    # compaction still due runs in the same preparation, so the prefix moves once, not at
    # the reduction and again at the next request.
    assert app.session(session_id).generation == 1
    assert not any(
        str(b.get("text", "")).startswith("Why does the import")
        for m in reduced["messages"]
        for b in m["content"]
    )
    # No block produced before the reduction is sent, and adaptive thinking, which takes a
    # loop whose replies have none, is sent as the host set it; a reply after it thinks
    # again, under the prefix as it now is, and is sent.
    assert thinking_sent(reduced) == 0
    assert thinking_sent(after) == 1
    for body in (reduced, after):
        assert body.get("thinking") == {"type": "adaptive"}
        assert violations(body) == []
    downgraded = [e for e in app.history(session_id) if isinstance(e, Session.ReasoningDowngraded)]
    assert len(downgraded) == 1
    assert "prefix changed" in downgraded[0].reason
    app.record_reply(session_id, Message.assistant("The import fails on row 17."))
    app.append_message(session_id, Message.user("Fix it."))
    assert "thinking" in body_of(app, session_id, BOUND)
    assert all(f.matches for f in audit_events(app.history(session_id)).findings)


def test_without_bound_thinking_the_loop_keeps_its_thinking_when_the_prompt_is_reduced() -> None:
    # A model that does not bind thinking to its prefix takes the block back unchanged
    # whatever came before it: the loop goes on with thinking on.
    app = service()
    session_id = start(app, model=UNBOUND, tool_output_share=0.5, threshold_ratio=0.85)
    room, _ = room_and_cap(app, session_id)
    prompt = pasted_log(int(room * 0.9))
    app.append_message(session_id, Message.user(prompt))
    loop_step(app, session_id, UNBOUND, words(40))
    loop_step(app, session_id, UNBOUND, words(int(room * 0.4)))

    body = body_of(app, session_id, UNBOUND)

    assert [e.reason for e in reshown(app, session_id)] == [PROMPT_REASON]
    assert app.session(session_id).generation == 0
    assert "truncated" in prompt_shown(body["messages"])
    assert "thinking" in body
    assert thinking_sent(body) == 2
    assert violations(body) == []
    first_reply = app.session(session_id).entries[1].message
    assert isinstance(first_reply.content[0], ThinkingBlock)


def test_settings_stored_before_keep_the_earlier_rule_and_their_fingerprint() -> None:
    stored = CompactionSettings().to_dict()
    del stored["whole_prompts"]

    assert ADDED_SETTINGS["whole_prompts"] is False
    assert CompactionSettings().whole_prompts
    assert not CompactionSettings.from_stored(stored).whole_prompts
    assert (
        CompactionSettings.from_stored(stored).fingerprint
        == CompactionSettings(whole_prompts=False).fingerprint
    )
    assert CompactionSettings(whole_prompts=False).fingerprint != CompactionSettings().fingerprint
