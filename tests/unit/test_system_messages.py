"""`role: "system"` messages inside `messages`: accepted where the API takes them, refused
elsewhere with a typed error, stored byte for byte, never summarized away, and rendered as a
system message or as marked user text by model."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from anthropic.types import SystemMessageParam

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.bootstrap import persistence_env
from abridged.adapters.claude_code import import_claude_code
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from abridged.domain.context import Entry
from abridged.domain.degradation import (
    MIN_BLOCK_TOKENS,
    plan_degradations,
    smallest_tokens,
    turn_room,
)
from abridged.domain.errors import (
    ContextTooSmallError,
    MisplacedBlockError,
    MisplacedSystemMessageError,
)
from abridged.domain.messages import Message, Role, ThinkingBlock, ToolResultBlock, ToolUseBlock
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from abridged.domain.tokens import MESSAGE_OVERHEAD, SYSTEM_MESSAGE_OPEN, block_tokens
from tests.support.anthropic_rules import assert_valid_request
from tests.support.builders import TOOLS, exchange, turn, words
from tests.support.checks import check_request, recount
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

COUNTER = FakeTokenCounter()
RULE = "Answer in French from now on."


def service(db: Path | None = None) -> Sessions:
    env = persistence_env(db) if db else {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    if db:
        env["AGGREGATE_CACHE_MAXSIZE"] = "0"  # every read replays from the store
    return Sessions(counter=COUNTER, summarizer=FakeSummarizer(words(30, "fact")), env=env)


def start(app: Sessions, model: str = "claude-opus-4-8", window: int = 3_000) -> UUID:
    return app.start_session(
        model=model,
        context_window=window,
        max_output_tokens=400,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0),
    )


def feed(app: Sessions, session_id: UUID, turns: int, first: int = 0) -> None:
    for i in range(first, first + turns):
        for message in turn(f"Request {i}", [words(100)]):
            if message.role is Role.ASSISTANT:
                check_request(app.prepare_request(session_id), COUNTER)
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)


def system_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "system"]


def test_a_system_message_after_a_user_turn_goes_out_as_one_and_round_trips(
    tmp_path: Path,
) -> None:
    app = service(tmp_path / "s.sqlite3")
    session_id = start(app)
    feed(app, session_id, 1)
    app.append_message(session_id, Message.user("Next question."))
    sdk_param: SystemMessageParam = {"role": "system", "content": RULE}
    app.append_message(session_id, sdk_param)

    body = check_request(app.prepare_request(session_id), COUNTER)

    assert body["messages"][-1]["role"] == "system"
    assert body["messages"][-1]["content"][0]["text"] == RULE
    app.record_reply(session_id, Message.assistant("D'accord."))
    stored = [
        e.message
        for e in service(tmp_path / "s.sqlite3").history(session_id)
        if isinstance(e, Session.MessageAppended)
    ]
    assert stored[-2] == Message.system(RULE)
    assert stored[-2].to_wire() == {"role": "system", "content": [{"type": "text", "text": RULE}]}
    assert audit_session(app, session_id).ok


@pytest.mark.parametrize(
    ("before", "after", "rule"),
    [
        ([], None, "first"),
        ([Message.user("Hi"), Message.assistant("Hello")], None, "after-assistant"),
        ([Message.user("Hi"), Message.system(RULE)], Message.user("Again"), "before-user"),
    ],
)
def test_a_misplaced_system_message_is_refused_naming_the_rule_and_writes_nothing(
    before: list[Message], after: Message | None, rule: str
) -> None:
    app = service()
    session_id = start(app)
    for message in before:
        if message.role is Role.ASSISTANT:
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
    count = len(app.history(session_id))

    with pytest.raises(MisplacedSystemMessageError) as raised:
        app.append_message(session_id, after or Message.system(RULE))

    assert raised.value.rule == rule
    assert len(app.history(session_id)) == count


def test_a_system_message_never_sits_between_a_tool_call_and_its_result() -> None:
    app = service()
    session_id = start(app)
    app.append_message(session_id, Message.user("Run it."))
    call, result = exchange(["ok"])
    app.record_reply(session_id, call)

    with pytest.raises(MisplacedSystemMessageError):
        app.append_message(session_id, Message.system(RULE))
    app.append_message(session_id, result)
    app.append_message(session_id, Message.system(RULE))  # after the results: fine

    body = check_request(app.prepare_request(session_id), COUNTER)
    assert [m["role"] for m in body["messages"][-3:]] == ["assistant", "user", "system"]


def test_a_system_message_holds_only_instructions_and_tool_changes() -> None:
    app = service()
    session_id = start(app)
    app.append_message(session_id, Message.user("Hi"))
    with pytest.raises(MisplacedBlockError, match="system message holds only"):
        app.append_message(
            session_id,
            {"role": "system", "content": [{"type": "tool_result", "tool_use_id": "x"}]},
        )


def test_an_older_model_gets_it_as_marked_text_in_the_user_turn_before_it() -> None:
    app = service()
    session_id = start(app, model="claude-sonnet-4-5")
    app.append_message(session_id, Message.user("Hi"))
    app.append_message(session_id, Message.system(RULE))
    prepared = app.prepare_request(session_id)

    body = render_request(prepared.context, model=prepared.model, max_tokens=400)

    assert_valid_request(body)
    assert [m["role"] for m in body["messages"]] == ["user"]
    marked = body["messages"][0]["content"][-1]["text"]
    assert marked.startswith(SYSTEM_MESSAGE_OPEN)
    assert RULE in marked


def test_a_compaction_keeps_system_messages_in_view() -> None:
    app = service()
    session_id = start(app)
    app.append_message(session_id, Message.user("Start."))
    app.append_message(session_id, Message.system(RULE))
    app.record_reply(session_id, Message.assistant("Oui."))
    feed(app, session_id, 12, first=1)
    session = app.session(session_id)
    assert session.generation >= 1
    assert session.retained_from > 2  # the system message's range was summarized

    app.append_message(session_id, Message.user("And now?"))
    body = check_request(app.prepare_request(session_id), COUNTER)

    assert system_messages(body) == [Message.system(RULE).to_wire()]
    assert body["messages"][1]["role"] == "system"  # right after the summaries' user message
    assert audit_session(app, session_id).ok


def test_a_claude_code_log_keeps_its_system_messages() -> None:
    records = [
        (1, {"type": "user", "message": {"role": "user", "content": "Fix the bug."}}),
        (2, {"type": "system", "message": {"role": "system", "content": RULE}}),
        (
            3,
            {
                "type": "assistant",
                "message": {"id": "m1", "role": "assistant", "content": "Je regarde."},
            },
        ),
        (4, {"type": "system", "subtype": "compact_boundary", "content": "compacted"}),
    ]

    imported = import_claude_code(records)

    assert [m.role for m in imported.messages] == [Role.USER, Role.SYSTEM, Role.ASSISTANT]
    assert imported.messages[1] == Message.system(RULE)


def carried_rule(db: Path) -> tuple[Sessions, UUID]:
    """A session on `db` whose rule, given early, a compaction has carried past."""
    app = service(db)
    session_id = start(app)
    app.append_message(session_id, Message.user("Start."))
    app.append_message(session_id, Message.system(RULE))
    app.record_reply(session_id, Message.assistant("Oui."))
    feed(app, session_id, 16, first=1)
    return app, session_id


def test_carried_system_messages_survive_a_snapshot_and_a_cold_load(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    app, session_id = carried_rule(db)
    app.append_message(session_id, Message.user("And now?"))
    warm = check_request(app.prepare_request(session_id), COUNTER)

    cold = service(db)
    assert cold.session(session_id).carried_system == app.session(session_id).carried_system
    assert check_request(cold.prepare_request(session_id), COUNTER) == warm
    assert system_messages(warm) == [Message.system(RULE).to_wire()]


def test_a_snapshot_gives_back_the_system_message_state_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    app, session_id = carried_rule(db)
    app.reconfigure(session_id, system="You review code tersely.")  # queued: the turn ended
    app.reconfigure(session_id, tools=[TOOLS[0], SEARCH])
    live = app.session(session_id)
    assert live.carried_system
    assert live.queued_system
    assert live.instructed_tools
    app.take_snapshot(session_id)

    cold = service(db).session(session_id)

    # Tuples, as every command and a replay leave them (JSON gives back lists).
    for name in ("carried_system", "queued_system", "instructed_tools"):
        assert type(getattr(cold, name)) is tuple, name
        assert getattr(cold, name) == getattr(live, name), name


def test_the_system_messages_in_view_are_counted_again_in_a_state_saved_without_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.sqlite3"
    app, session_id = carried_rule(db)
    app.append_message(session_id, Message.user("Stay brief."))
    app.append_message(session_id, Message.system(RULE + " And be brief."))
    session = app.session(session_id)
    shown = [e.shown_tokens for e in (*session.carried_system, *session.entries)]
    kinds = [e.message.is_system for e in (*session.carried_system, *session.entries)]
    expected = sum(t for t, system in zip(shown, kinds, strict=True) if system)

    assert session.system_message_tokens == expected
    # A snapshot taken before the count was kept: the state has none, and counts it again.
    del session.__dict__["counted_system_tokens"]
    assert session.system_message_tokens == expected
    cold = service(db).session(session_id)
    assert cold.system_message_tokens == expected


def names(app: Sessions, session_id: UUID) -> list[str]:
    return [type(e).__name__ for e in app.history(session_id)]


def test_a_new_system_prompt_is_a_system_message_for_a_model_that_takes_them(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.sqlite3"
    app = service(db)
    session_id = start(app)
    feed(app, session_id, 2)

    recorded = app.reconfigure(session_id, system="You review code tersely.")

    assert recorded == ["SystemPromptInstructed"]  # the turn ended: it waits for a user turn
    app.append_message(session_id, Message.user("Review it."))
    body = check_request(app.prepare_request(session_id), COUNTER)
    assert body["system"][0]["text"] == "You are a careful coding agent."  # the top stays
    assert body["messages"][-1]["role"] == "system"
    assert "You review code tersely." in body["messages"][-1]["content"][0]["text"]
    assert names(app, session_id)[-3:] == [
        "MessageAppended",
        "MessageAppended",
        "QueuedSystemMessagesAppended",
    ]
    assert app.reconfigure(session_id, system="You review code tersely.") == []
    cold = service(db)
    assert cold.session(session_id).queued_system == ()
    assert audit_session(cold, session_id).ok


def test_a_new_system_prompt_awaiting_a_reply_follows_the_user_turn_at_once() -> None:
    app = service()
    session_id = start(app)
    app.append_message(session_id, Message.user("Hi"))

    recorded = app.reconfigure(session_id, system="Be brief.")

    assert recorded == ["SystemPromptInstructed", "MessageAppended"]
    body = check_request(app.prepare_request(session_id), COUNTER)
    assert [m["role"] for m in body["messages"]] == ["user", "system"]


def test_an_older_model_still_gets_the_system_prompt_rewritten() -> None:
    app = service()
    session_id = start(app, model="claude-sonnet-4-5")
    feed(app, session_id, 1)

    assert app.reconfigure(session_id, system="Be brief.") == ["SystemPromptChanged"]


def test_a_system_message_is_shown_whole_however_long() -> None:
    app = service()
    session_id = start(app, window=3_000)
    app.append_message(session_id, Message.user("Hi"))
    long_rule = words(1_200, "rule")

    app.append_message(session_id, Message.system(long_rule))

    body = check_request(app.prepare_request(session_id), COUNTER)
    assert body["messages"][-1]["content"][0]["text"] == long_rule


SEARCH = {"name": "search", "description": "Search.", "input_schema": {"type": "object"}}


def test_new_tools_are_a_tool_change_message_for_a_model_that_takes_them() -> None:
    app = service()
    session_id = start(app)
    feed(app, session_id, 1)

    recorded = app.reconfigure(session_id, tools=[TOOLS[0], SEARCH])

    assert recorded == ["ToolsInstructed"]
    app.append_message(session_id, Message.user("Search it."))
    body = check_request(app.prepare_request(session_id), COUNTER)
    assert [t["name"] for t in body["tools"]] == [t["name"] for t in TOOLS]  # the top stays
    change = body["messages"][-1]
    assert change["role"] == "system"
    assert change["content"] == [
        {"type": "tool_removal", "tool": {"type": "tool_reference", "name": TOOLS[1]["name"]}},
        {"type": "tool_addition", "tool": {"type": "tool_definition", "definition": SEARCH}},
    ]
    assert app.reconfigure(session_id, tools=[SEARCH, TOOLS[0]]) == []  # the same set
    assert audit_session(app, session_id).ok


def test_a_changed_tool_definition_still_rewrites_the_tools() -> None:
    app = service()
    session_id = start(app)
    feed(app, session_id, 1)
    changed = {**TOOLS[0], "description": "Runs a command, now with a timeout."}

    assert app.reconfigure(session_id, tools=[changed, TOOLS[1]]) == ["ToolsChanged"]


def test_top_level_rewrites_the_top_on_a_model_that_takes_system_messages() -> None:
    # A caller that sends its own top level (a proxy forwarding its client's): the change
    # is recorded there, with no system message the caller would not send.
    app = service()
    session_id = start(app)
    feed(app, session_id, 1)

    recorded = app.reconfigure(
        session_id, system="Be brief.", tools=[TOOLS[0], SEARCH], top_level=True
    )

    assert recorded == ["SystemPromptChanged", "ToolsChanged"]
    app.append_message(session_id, Message.user("Search it."))
    body = check_request(app.prepare_request(session_id), COUNTER)
    assert body["system"][0]["text"] == "Be brief."
    assert [t["name"] for t in body["tools"]] == [TOOLS[0]["name"], "search"]
    assert "system" not in [m["role"] for m in body["messages"]]
    assert audit_session(app, session_id).ok


@pytest.mark.parametrize("stored", [False, True])
def test_system_messages_that_fill_the_window_are_refused_at_append_never_at_a_request(
    stored: bool, tmp_path: Path
) -> None:
    # A host that sends an instruction every turn: none is ever summarized away, so they fill
    # the budget. A request never fails for them; the instruction that would leave no room
    # for a user turn is refused when appended, naming the sizes, and nothing is written.
    # Stored, every command loads the session from its snapshots and events.
    app = service(tmp_path / "sessions.sqlite3" if stored else None)
    session_id = start(app)
    refused: list[str] = []
    for k in range(60):
        app.append_message(session_id, Message.user(f"Turn {k}. {words(30 if k % 5 else 900)}"))
        before = len(app.history(session_id))
        try:
            app.append_message(session_id, Message.system(f"Rule {k}: {words(90)}"))
        except ContextTooSmallError as error:
            refused.append(str(error))
            assert len(app.history(session_id)) == before
        body = check_request(app.prepare_request(session_id), COUNTER)
        assert len(system_messages(body)) == k + 1 - len(refused)
        app.record_reply(session_id, Message.assistant(f"Done {k}. {words(30)}"))

    assert refused, "the instructions should have filled the window"
    assert "the system messages kept in view" in refused[0]
    assert audit_session(app, session_id).ok


def accepted(app: Sessions, session_id: UUID, message: Message) -> bool:
    """Appends (or records, for a reply) `message`; False when it is refused, writing nothing."""
    before = len(app.history(session_id))
    try:
        if message.role is Role.ASSISTANT:
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
    except ContextTooSmallError:
        assert len(app.history(session_id)) == before
        return False
    return True


@pytest.mark.parametrize("thinking", [100, 250])
def test_system_messages_beside_a_loop_led_by_thinking_never_fail_a_request(
    thinking: int,
) -> None:
    # An instruction every turn, and one again after each tool result. While a loop is open
    # its call goes out with its thinking whole: an instruction after the result must leave
    # room for that call too, and a call for its results at their smallest, or the next
    # request cannot be built and the session is stuck.
    app = service()
    session_id = start(app)
    refused = 0
    for k in range(24):
        app.append_message(session_id, Message.user(f"Task {k}."))
        refused += not accepted(app, session_id, Message.system(f"Rule {k}: {words(90)}"))
        check_request(app.prepare_request(session_id), COUNTER)
        call = Message.assistant(
            ThinkingBlock(words(thinking, "think"), f"sig-{k}"),
            ToolUseBlock(f"toolu_{k}", "run_command", {"command": "ls"}),
        )
        if not accepted(app, session_id, call):
            app.record_reply(session_id, Message.assistant(f"Task {k} is too large."))
            continue
        app.append_message(session_id, Message.user(ToolResultBlock(f"toolu_{k}", words(40))))
        refused += not accepted(app, session_id, Message.system(f"Again {k}: {words(90)}"))
        check_request(app.prepare_request(session_id), COUNTER)
        app.record_reply(session_id, Message.assistant(f"Done {k}."))

    assert refused, "the instructions should have filled the window"
    assert audit_session(app, session_id).ok


@pytest.mark.parametrize("long_input", [100, 150])
def test_an_instruction_after_several_tool_results_leaves_room_for_each_of_them(
    long_input: int,
) -> None:
    # Found by the property with long instructions: thirteen fill most of the window, then a
    # reply calls three tools, their three long results come back, and one more instruction
    # follows. Its room check counted the results it follows as one reduced block, though
    # each is shown in one, and the call at its smallest, though a floor for each of its
    # blocks (its small ones too) left its long input whole: accepted, it left every later
    # request unpreparable (`ContextOverflowError`). It is refused now, writing nothing;
    # an instruction accepted always leaves the next request valid.
    app = service()
    session_id = start(app)
    app.append_message(session_id, Message.user("Fix the build."))
    for k in range(13):
        app.append_message(session_id, Message.system(f"Rule {k}: {words(150)}"))
    check_request(app.prepare_request(session_id), COUNTER)
    calls = [
        ToolUseBlock("toolu_1", "run_command", {"command": "ls"}),
        ToolUseBlock("toolu_2", "run_command", {"command": words(long_input)}),
        ToolUseBlock("toolu_3", "run_command", {"command": "make"}),
    ]
    app.record_reply(session_id, Message.assistant("Looking.", *calls))
    results = [ToolResultBlock(call.id, words(300)) for call in calls]
    app.append_message(session_id, Message.user(*results))
    accepted(app, session_id, Message.system(f"Rule 13: {words(150)}"))
    check_request(app.prepare_request(session_id), COUNTER)
    assert audit_session(app, session_id).ok


def test_an_instruction_after_another_leaves_room_for_the_turn_both_follow() -> None:
    # The second of two instructions after tool results counts the results (each at its
    # smallest) and the calls they answer, as the first does; not the first instruction,
    # which is in view already. And at least what a later prompt needs.
    calls = [ToolUseBlock(f"toolu_{k}", "run_command", {"command": words(60)}) for k in range(3)]
    results = [ToolResultBlock(c.id, words(40)) for c in calls]
    made, answered = Message.assistant(*calls), Message.user(*results)
    entries = [
        Entry(k, m, 0, tuple(block_tokens(b, COUNTER.count) for b in m.content))
        for k, m in enumerate([Message.user("Go."), made, answered, Message.system(RULE)])
    ]
    room = turn_room(entries[:3])
    assert room == smallest_tokens(answered, entries[2].block_tokens) + smallest_tokens(
        made, entries[1].block_tokens
    )
    assert room > MESSAGE_OVERHEAD + 3 * MIN_BLOCK_TOKENS
    assert turn_room(entries) == room
    assert turn_room(entries[:1]) == MESSAGE_OVERHEAD + MIN_BLOCK_TOKENS


def test_a_message_of_small_blocks_and_a_large_one_is_shown_at_its_smallest() -> None:
    # The room checks count a message at its smallest: its small blocks whole, each large one
    # at `MIN_BLOCK_TOKENS`. Its reduction must reach that, not stop at `MIN_BLOCK_TOKENS`
    # for every block, which left the large one whole beside three small ones.
    message = Message.assistant(
        "Looking.",
        ToolUseBlock("toolu_1", "run_command", {"command": "ls"}),
        ToolUseBlock("toolu_2", "run_command", {"command": words(150)}),
        ToolUseBlock("toolu_3", "run_command", {"command": "make"}),
    )
    counts = [block_tokens(block, COUNTER.count) for block in message.content]
    _, shown = plan_degradations(message, 0, COUNTER.count, counts)
    assert MESSAGE_OVERHEAD + sum(shown) <= smallest_tokens(message, counts)
    assert shown[2] <= MIN_BLOCK_TOKENS < counts[2]


@pytest.mark.parametrize(
    "change",
    [
        Message.system(RULE),
        Message.from_wire(
            {
                "role": "system",
                "content": [
                    {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "read"}}
                ],
            }
        ),
    ],
    ids=["instruction", "tool-change"],
)
@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "claude-opus-4-8"])
def test_a_system_message_is_counted_for_the_request_of_either_model(
    change: Message, model: str
) -> None:
    # With the real tokenizer: the marks around a folded message cost more than a message of
    # its own, so a count of it as a system message alone fell short of the folded request.
    counter = TiktokenCounter()
    app = Sessions(
        counter=counter,
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model="claude-opus-4-8",
        context_window=8_000,
        max_output_tokens=400,
        system="You are a careful coding agent.",
        tools=TOOLS,
    )
    app.append_message(session_id, Message.user("Hi"))
    app.append_message(session_id, change)
    app.reconfigure(session_id, model=model, context_window=8_000)

    prepared = app.prepare_request(session_id)
    body = render_request(prepared.context, model=prepared.model, max_tokens=400)

    counted = math.ceil(recount(body, counter) * app.session(session_id).calibration)
    assert counted <= prepared.context.estimate
    check_request(prepared, counter, app.session(session_id).calibration)
