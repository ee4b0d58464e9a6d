"""System messages in generated agent sessions: wherever a host puts them after a user turn,
every request is valid for the model (as a system message, or folded into marked user text),
every one of them is in every later request whatever compactions happen, and the audit
re-derives every decision."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import event as note
from hypothesis import strategies as st

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.auditing import audit_session
from abridged.application.ports import RequestOptions
from abridged.application.service import Sessions
from abridged.domain.errors import ContextTooSmallError
from abridged.domain.messages import (
    Block,
    Message,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from abridged.domain.settings import CompactionSettings
from tests.properties.strategies import TOOLS, conversations
from tests.support.anthropic_rules import assert_valid_request
from tests.support.checks import check_request
from tests.support.fakes import FakeSummarizer

COUNTER = TiktokenCounter()


LONG_RULE = " ".join(["answer briefly and cite the file you read"] * 21)
"""About 150 words: six of them take a third of a 3,000-token window."""


FIELDS = st.sampled_from(
    [
        {},
        {"clear_at": "never"},
        {"clear_at": "next_user_message"},
        {"output_config": {"effort": "low"}},
        {"output_config": {"effort": "high"}, "clear_at": "next_user_message"},
    ]
)
"""A system message's own fields (SDK `BetaSystemMessageParam`)."""


def sent_with_its_fields(body: dict[str, Any], given: Message) -> bool:
    own = json.loads(given.extra)
    return any(
        m["role"] == "system"
        and given.text in repr(m.get("content"))
        and {k: v for k, v in m.items() if k not in ("role", "content")} == own
        for m in body["messages"]
    )


def with_instructions(
    messages: list[Message],
    after: list[bool],
    rule: str = "answer briefly.",
    fields: list[dict[str, Any]] | None = None,
) -> list[Message]:
    """The conversation with a system message (`rule`, with the next of `fields`) after each
    user message `after` picks."""
    out: list[Message] = []
    picks = iter(after)
    own = iter(fields or [])
    for index, message in enumerate(messages):
        out.append(message)
        following = messages[index + 1] if index + 1 < len(messages) else None
        if (
            message.role is Role.USER
            and (following is None or following.role is Role.ASSISTANT)
            and next(picks, False)
        ):
            text = f"Instruction {index}: {rule}"
            wire = {"role": "system", "content": text, **next(own, {})}
            out.append(Message.from_wire(wire))
    return out


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    # Four turns are up to a hundred messages: past the twenty places an instruction may go
    # and many times the 3,000 to 8,000-token windows, so compactions carry them.
    messages=conversations(max_turns=4),
    after=st.lists(st.booleans(), min_size=20, max_size=20),
    model=st.sampled_from(["claude-opus-4-8", "claude-sonnet-4-5"]),
    window=st.integers(3_000, 8_000),
    long=st.booleans(),
    fields=st.lists(FIELDS, min_size=20, max_size=20),
)
def test_system_messages_stay_valid_and_in_view(
    messages: list[Message],
    after: list[bool],
    model: str,
    window: int,
    long: bool,
    fields: list[dict[str, Any]],
) -> None:
    # Long instructions fill small windows: an append (a reply's too) may then be refused (a
    # typed error, nothing written), which ends the session here; a request never is once
    # every append was accepted, whatever loop led by thinking is open (invariant 2).
    app = Sessions(
        counter=COUNTER,
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model=model,
        context_window=window,
        max_output_tokens=400,
        system="You are an agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0),
    )
    given_so_far: list[str] = []
    with_fields: list[Message] = []
    rule = LONG_RULE if long else "answer briefly."
    conversation = with_instructions(messages, after, rule, fields)
    if conversation[-1].role is Role.ASSISTANT:
        conversation.append(Message.user("What next?"))
    for message in conversation:
        if message.role is Role.ASSISTANT:
            prepared = app.prepare_request(session_id)
            if model == "claude-opus-4-8":
                body = check_request(prepared, COUNTER, app.session(session_id).calibration)
            else:
                body = render_request(prepared.context, model=model, max_tokens=400)
                assert_valid_request(body)
            sent = repr(body["messages"])
            assert all(text in sent for text in given_so_far)
            # Its own fields go with it, as they came (to a model that takes the role).
            assert all(sent_with_its_fields(body, given) for given in with_fields)
            try:
                app.record_reply(session_id, message)
            except ContextTooSmallError:
                note("a reply refused")
                break
        else:
            try:
                app.append_message(session_id, message)
            except ContextTooSmallError:
                note("an append refused")
                break
            if message.role is Role.SYSTEM:
                turn_only = '"clear_at":"next_user_message"' in message.extra
                if model == "claude-opus-4-8" or not turn_only:
                    # Folded into text, a turn-scoped one is read only while its turn lasts.
                    given_so_far.append(message.text)
                if model == "claude-opus-4-8" and message.extra:
                    with_fields.append(message)
    session = app.session(session_id)
    note(f"compacted: {'yes' if session.generation else 'no'}")
    note(f"system messages carried: {'yes' if session.carried_system else 'no'}")
    assert audit_session(app, session_id).ok


def found_by_a_run_with_long_instructions() -> list[Message]:
    """The session a run of the property above found with 150-word instructions at a
    3,000-token window (shrunk by hypothesis; its token counts matter, so its text stays)."""
    ids = (f"toolu_{n:05d}" for n in range(1, 100))

    def calls(count: int, command: str = "0") -> list[ToolUseBlock]:
        return [
            ToolUseBlock(next(ids), "run_command", {"command": command, "n": 0})
            for _ in range(count)
        ]

    def answered(made: list[ToolUseBlock], outputs: list[str] | None = None) -> Message:
        given = outputs or [""] * len(made)
        results = [ToolResultBlock(c.id, out) for c, out in zip(made, given, strict=True)]
        return Message.user(*results, TextBlock("0"))

    def lines(count: int, line: str) -> str:
        return "\n".join(f"{i}: {line}" for i in range(count))

    messages = [Message.user("0")]
    for count in (3, 1, 1, 2, 1, 1, 3):
        made = calls(count)
        if count == 3 and len(messages) == 1:
            made[1] = ToolUseBlock(made[1].id, "run_command", {"command": "\U00047633PÀ³Ê", "n": 0})
        messages += [Message.assistant(*made), answered(made)]
    messages += [
        Message.assistant("0"),
        Message.user("0"),
        Message.assistant("0"),
        Message.user("0"),
    ]
    made = calls(1)
    messages += [Message.assistant(*made), answered(made)]
    made = calls(1, " ".join(["token"] * 204))
    messages += [
        Message.assistant(RedactedThinkingBlock("RVhBTVBMRQ=="), *made),
        answered(made, [lines(467, "abc")]),
    ]
    made = calls(2)
    messages += [Message.assistant(*made), answered(made, ["", lines(40, "\x15\x06Øó")])]
    for count in (2, 1, 1):
        made = calls(count)
        messages += [Message.assistant(*made), answered(made)]
    return messages


def test_a_prune_put_off_for_a_compaction_is_planned_again_after_a_reshow() -> None:
    # Instructions after the 6th to 12th user turns shrink what a message may be shown in;
    # a request that no longer fits shows the tail again, smaller. The prune put off for the
    # compaction had been planned on the tail as shown before: run with those counts, it
    # recorded a prune the audit, re-deriving it after the reshow, could not match.
    app = Sessions(
        counter=COUNTER,
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model="claude-opus-4-8",
        context_window=3_000,
        max_output_tokens=400,
        system="You are an agent.",
        tools=TOOLS,
        # Found when the last resort named outputs under 80 tokens too: the prune it
        # records is what the audit re-derives after the reshow.
        settings=CompactionSettings(threshold_floor_tokens=0, spare_small_outputs=False),
    )
    messages = found_by_a_run_with_long_instructions()
    picks = [False] * 5 + [True] * 7
    for sent in with_instructions(messages, picks):
        if sent.role is Role.ASSISTANT:
            app.prepare_request(session_id)
            app.record_reply(session_id, sent)
        elif sent.role is Role.SYSTEM:
            app.append_message(
                session_id, Message.system(sent.text.replace("answer briefly.", LONG_RULE))
            )
        else:
            app.append_message(session_id, sent)
    assert any(type(e).__name__ == "ToolsPruned" for e in app.history(session_id))
    assert audit_session(app, session_id).ok


def test_a_thinking_loop_that_outgrows_its_instructions_is_cut_inside_with_thinking_paused() -> (
    None
):
    # Six long instructions after one prompt, then a loop led by signed thinking whose two
    # exchanges were each accepted (each fits beside the instructions at its smallest). Cuts
    # inside a thinking-led loop fall only before a reply that starts with thinking, so the
    # smallest tail held the whole loop, which did not fit: every later request raised
    # `ContextOverflowError`, on messages the session had accepted.
    app = Sessions(
        counter=COUNTER,
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model="claude-opus-4-8",
        context_window=3_000,
        max_output_tokens=400,
        system="You are an agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0),
    )
    ids = (f"toolu_{n:05d}" for n in range(1, 10))

    def words(word: str, count: int) -> str:
        return " ".join([word] * count)

    def exchange(lead: list[Block], commands: list[str]) -> list[Message]:
        calls = [ToolUseBlock(next(ids), "run_command", {"command": c, "n": 0}) for c in commands]
        output = "\n".join(f"{i}: 0" for i in range(300))
        results = [ToolResultBlock(calls[0].id, ""), ToolResultBlock(calls[1].id, output)]
        return [Message.assistant(*lead, *calls), Message.user(*results)]

    conversation = [Message.user("Fix the build.")]
    conversation += [Message.system(f"Instruction {k}: {LONG_RULE}") for k in range(6)]
    thought: list[Block] = [
        ThinkingBlock(words("plan", 150), "sig1=="),
        TextBlock(words("token", 150)),
    ]
    conversation += exchange(thought, [words("token", 150), "0"])
    conversation += exchange([TextBlock(words("token", 250))], ["0", words("token", 250)])
    conversation.append(Message.assistant("Done."))
    for message in conversation:
        if message.role is Role.ASSISTANT:
            prepared = app.prepare_request(session_id)
            check_request(prepared, COUNTER, app.session(session_id).calibration)
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
    # The last request cut inside the loop: the reply that opened it left with its thinking,
    # so thinking is off until the next prompt, as the API requires.
    assert prepared.context.thinking_paused
    thinking = RequestOptions(thinking={"type": "enabled", "budget_tokens": 1_024})
    body = render_request(
        prepared.context, model="claude-opus-4-8", max_tokens=2_000, options=thinking
    )
    assert "thinking" not in body
    assert audit_session(app, session_id).ok
