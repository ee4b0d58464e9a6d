"""Never stuck: no message can make every later request fail.

Messages far larger than the window are stored whole and shown reduced; only the system
prompt, the tools and what the model's turn must carry back unchanged can refuse a request,
and then when the session starts or the message is appended, with nothing written.
"""

from __future__ import annotations

import base64
import json
import math
import random
from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest

from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.audit import facts
from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from abridged.domain.degradation import check_room
from abridged.domain.errors import ContextOverflowError, ContextTooSmallError
from abridged.domain.limits import Limits
from abridged.domain.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireBlock,
)
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from abridged.domain.tokens import MESSAGE_OVERHEAD, REQUEST_OVERHEAD
from tests.support.checks import check_request
from tests.support.counting import MemoCounter

COUNTER = MemoCounter(TiktokenCounter())
TOOLS = (
    {
        "name": "write_file",
        "description": "Write a file.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        },
    },
)


def real_app() -> Sessions:
    return Sessions(
        counter=COUNTER,
        summarizer=ExtractiveSummarizer(COUNTER),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )


def source_lines(tokens: int) -> str:
    # About 10 tokens a line of varied code-like text.
    return "\n".join(
        f"def handler_{i}(request): return respond({i} * value_{i % 97})"
        for i in range(tokens // 14)
    )


def test_a_200k_user_message_and_a_60k_tool_input_at_16k_keep_the_session_going() -> None:
    app = real_app()
    session_id = app.start_session(
        model="claude-sonnet-4-5",
        context_window=16_000,
        max_output_tokens=4_000,
        system="You are a coding agent.",
        tools=TOOLS,
    )
    huge_prompt = source_lines(200_000)
    huge_file = source_lines(60_000)
    assert COUNTER.count(huge_prompt) > 200_000
    assert COUNTER.count(huge_file) > 60_000

    app.append_message(session_id, Message.user(f"Refactor this:\n{huge_prompt}"))
    first = check_request(app.prepare_request(session_id), COUNTER)
    call = Message.assistant(
        "Writing the refactored file.",
        ToolUseBlock("toolu_w1", "write_file", {"path": "app/handlers.py", "content": huge_file}),
    )
    app.record_reply(session_id, call)
    app.append_message(session_id, Message.user(ToolResultBlock("toolu_w1", "written")))
    second = check_request(app.prepare_request(session_id), COUNTER)
    app.record_reply(session_id, Message.assistant("Done. What next?"))
    app.append_message(session_id, Message.user("Now add tests."))
    third = check_request(app.prepare_request(session_id), COUNTER)

    # The user's text is shown head and tail.
    shown_prompt = first["messages"][0]["content"][0]["text"]
    assert shown_prompt.startswith("Refactor this:\ndef handler_0(request)")
    assert shown_prompt.rstrip().endswith(huge_prompt[-40:])
    assert "characters of this message truncated" in shown_prompt
    # The tool call's input keeps its shape: the same keys, short values whole, long ones cut.
    shown_call = next(b for b in second["messages"][1]["content"] if b["type"] == "tool_use")
    assert set(shown_call["input"]) == {"path", "content"}
    assert shown_call["input"]["path"] == "app/handlers.py"
    assert shown_call["input"]["content"].startswith("def handler_0(request)")
    assert shown_call["input"]["content"].endswith(huge_file[-40:])
    assert "characters truncated" in shown_call["input"]["content"]
    assert third["messages"][-1]["content"][-1]["text"] == "Now add tests."

    # The history keeps both whole, and the events say what each request showed.
    appended = [e for e in app.history(session_id) if isinstance(e, Session.MessageAppended)]
    assert appended[0].message.text == f"Refactor this:\n{huge_prompt}"
    assert appended[1].message.tool_uses[0].input["content"] == huge_file
    assert [t.block_index for t in appended[0].truncations] == [0]
    assert [t.block_index for t in appended[1].truncations] == [1]
    assert not appended[2].truncations
    assert facts(appended[0])["reduced_blocks"] == 1
    assert "reduced_blocks" not in facts(appended[2])


@pytest.mark.parametrize(
    "tool_input",
    [
        {"edits": [{"old": f"a{i}", "new": f"b{i}"} for i in range(3_000)]},
        {"matrix": [[i * j for j in range(40)] for i in range(300)]},
        {f"key_{i}": i for i in range(4_000)},
    ],
    ids=["short-edits", "numbers", "many-keys"],
)
def test_a_tool_input_of_many_short_values_is_shown_by_its_ends_not_left_unsendable(
    tool_input: dict[str, Any],
) -> None:
    # No string is long enough to cut: the input used to stay whole, accepted at append and
    # then too large for every later request (not sent, the session stuck on it).
    app = real_app()
    session_id = app.start_session(
        model="claude-sonnet-4-5",
        context_window=8_000,
        max_output_tokens=2_000,
        system="You are a coding agent.",
        tools=TOOLS,
    )
    assert COUNTER.count(json.dumps(tool_input)) > 20_000
    app.append_message(session_id, Message.user("Apply the edits."))
    check_request(app.prepare_request(session_id), COUNTER)
    app.record_reply(
        session_id, Message.assistant(ToolUseBlock("toolu_m1", "write_file", tool_input))
    )
    app.append_message(session_id, Message.user(ToolResultBlock("toolu_m1", "applied")))
    second = check_request(app.prepare_request(session_id), COUNTER)
    app.record_reply(session_id, Message.assistant("Applied. What next?"))
    app.append_message(session_id, Message.user("Now run the tests."))
    check_request(app.prepare_request(session_id), COUNTER)

    shown_call = next(b for b in second["messages"][1]["content"] if b["type"] == "tool_use")
    assert "items truncated" in json.dumps(shown_call["input"], ensure_ascii=False)
    appended = [e for e in app.history(session_id) if isinstance(e, Session.MessageAppended)]
    assert appended[1].message.tool_uses[0].input == tool_input  # the history keeps it whole
    assert appended[1].truncations[0].items > 0
    assert audit_session(app, session_id).ok


def test_an_image_or_document_beyond_the_budget_becomes_a_placeholder() -> None:
    app = real_app()
    session_id = app.start_session(model="m", context_window=2_500, max_output_tokens=500)
    pdf = base64.b64encode(b"%PDF-1.7 " + bytes(range(256)) * 400).decode()
    document = WireBlock.of(
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": pdf},
            "title": "Q3 report",
        }
    )
    image = ImageBlock(
        "base64", media_type="image/png", data=base64.b64encode(b"\x89PNG\r\n\x1a\n" * 10).decode()
    )
    app.append_message(session_id, Message.user("Summarize these.", document, image))

    body = check_request(app.prepare_request(session_id), COUNTER)

    shown = body["messages"][0]["content"]
    assert shown[0]["text"] == "Summarize these."
    assert shown[1]["type"] == "text"
    assert "document 'Q3 report' (application/pdf)" in shown[1]["text"]
    assert "omitted from this request" in shown[1]["text"]
    assert app.session(session_id).entries[0].message.content[1] == document


def test_a_system_prompt_larger_than_the_window_is_refused_at_start() -> None:
    app = real_app()
    system = source_lines(20_000)

    with pytest.raises(ContextTooSmallError) as raised:
        app.start_session(model="m", context_window=16_000, max_output_tokens=4_000, system=system)

    error = raised.value
    assert isinstance(error, ContextOverflowError)
    assert error.system_tokens == COUNTER.count(system) + 3
    assert error.budget == 12_000
    assert f"the system prompt ({error.system_tokens:,} tokens)" in str(error)
    assert "12,000" in str(error)


def test_a_refusal_under_calibration_says_how_its_parts_add_up_to_the_need() -> None:
    # A session whose provider counts more than the local counter: the need is calibrated,
    # the parts are as counted; the message says so, or its sum would not match.
    limits = Limits(16_000, 4_000, CompactionSettings())
    with pytest.raises(ContextTooSmallError) as raised:
        check_room(limits, 9_000, 43, 200, calibration=1.35, what="this exchange")

    text = str(raised.value)
    counted = REQUEST_OVERHEAD + 9_000 + 43 + limits.summaries_tokens + MESSAGE_OVERHEAD + 200
    assert f"need {math.ceil(counted * 1.35):,} tokens ({counted:,} as counted, x1.35" in text
    with pytest.raises(ContextTooSmallError) as uncalibrated:
        check_room(limits, 12_000, 43, 200, what="this exchange")
    assert "as counted" not in str(uncalibrated.value)


def test_thinking_too_large_to_send_back_is_refused_when_appended_and_nothing_is_written() -> None:
    app = real_app()
    session_id = app.start_session(
        model="m", context_window=16_000, max_output_tokens=4_000, tools=TOOLS
    )
    app.append_message(session_id, Message.user("Go."))
    before = len(app.history(session_id))
    reply = Message.assistant(
        ThinkingBlock(source_lines(30_000), "c2lnbmF0dXJl"),
        ToolUseBlock("toolu_1", "write_file", {"path": "a", "content": "b"}),
    )

    with pytest.raises(ContextTooSmallError) as raised:
        app.record_reply(session_id, reply)

    assert raised.value.irreducible_tokens > 12_000
    assert "thinking" in str(raised.value)
    assert len(app.history(session_id)) == before


def test_a_prompt_of_more_blocks_than_the_room_can_show_is_refused_not_left_unsendable() -> None:
    # The system prompt leaves a few hundred tokens: a prompt of two long texts is shown
    # reduced, but twelve cannot be shown even at their smallest (each block keeps a marker
    # and a little of each end): accepting it would make every later request fail.
    app = real_app()
    session_id = app.start_session(
        # A model whose tokenizer the counter approximates at 1.0: the room is what it counts.
        model="claude-sonnet-4-5",
        context_window=4_000,
        max_output_tokens=1_000,
        system=" ".join(["rule"] * 2_600),
    )
    long = " ".join(["word"] * 400)

    with pytest.raises(ContextTooSmallError) as raised:
        app.append_message(session_id, Message.user(*[TextBlock(long) for _ in range(12)]))

    assert raised.value.irreducible_tokens == 4 + 12 * 48
    assert len(app.history(session_id)) == 1  # only the start: nothing was written
    app.append_message(session_id, Message.user(TextBlock(long), TextBlock(long)))
    body = check_request(app.prepare_request(session_id), COUNTER)
    assert len(body["messages"][0]["content"]) == 2


def test_unknown_blocks_are_never_changed_even_beside_a_huge_text() -> None:
    app = real_app()
    session_id = app.start_session(model="m", context_window=8_000, max_output_tokens=1_000)
    future = {"type": "hologram", "frames": [3, 1, 2], "meta": {"z": None, "a": "ü"}}
    app.append_message(
        session_id, Message.user(TextBlock(source_lines(30_000)), WireBlock.of(future))
    )

    body = check_request(app.prepare_request(session_id), COUNTER, future_types=("hologram",))

    sent = body["messages"][0]["content"][1]
    sent.pop("cache_control", None)
    assert json.dumps(sent, ensure_ascii=False) == json.dumps(future, ensure_ascii=False)


def test_a_huge_server_tool_result_is_cut_in_place_with_its_call_and_secrets_kept() -> None:
    app = real_app()
    # A late threshold: how the result is cut in place is the point here, not a compaction.
    session_id = app.start_session(
        model="m",
        context_window=16_000,
        max_output_tokens=4_000,
        settings=CompactionSettings(threshold_ratio=0.7),
    )
    app.append_message(session_id, Message.user("Read the changelog page."))
    page = source_lines(40_000)
    use = WireBlock.of(
        {
            "type": "server_tool_use",
            "id": "srvtoolu_1",
            "name": "web_fetch",
            "input": {"url": "https://example.com/changelog"},
        }
    )
    result = WireBlock.of(
        {
            "type": "web_fetch_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": {
                "type": "web_fetch_result",
                "url": "https://example.com/changelog",
                "encrypted_content": "RW5j" * 50,
                "content": {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": page},
                },
            },
        }
    )
    app.record_reply(session_id, Message.assistant(use, result, TextBlock("It lists 3 releases.")))
    app.append_message(session_id, Message.user("Which is the latest?"))

    body = check_request(app.prepare_request(session_id), COUNTER)

    sent = body["messages"][1]["content"]
    assert [b["type"] for b in sent] == ["server_tool_use", "web_fetch_tool_result", "text"]
    fetched = sent[1]["content"]
    assert fetched["encrypted_content"] == "RW5j" * 50
    assert fetched["url"] == "https://example.com/changelog"
    shown_page = fetched["content"]["source"]["data"]
    assert shown_page.startswith(page[:200])
    assert "characters truncated" in shown_page
    stored = app.session(session_id).entries[1].message.content[1]
    assert stored == result


def test_a_long_tool_loop_led_by_thinking_is_sent_with_its_older_outputs_by_name() -> None:
    """A tool loop led by thinking cannot be cut inside (its first message must stay), and
    its outputs, pruned to head and tail, can still outgrow a small window. The older outputs
    are then shown by name only, recorded and audited, instead of sending nothing."""
    app = real_app()
    session_id = small_session(app)
    bodies = write_loop(app, session_id, 30)
    body = bodies[-1]

    # The whole loop is sent, its first message with its thinking.
    assert body["messages"][1]["content"][0]["type"] == "thinking"
    assert sum(1 for m in body["messages"] if m["role"] == "assistant") == 30
    last = body["messages"][-1]["content"][0]
    assert last["type"] == "tool_result"
    assert str(last["content"]).startswith("wrote line 0 of h29.py")
    fits = [
        e
        for e in app.history(session_id)
        if isinstance(e, Session.ToolsPruned) and e.reason.startswith("to fit")
    ]
    assert fits
    assert all(o.text.startswith("[output of write_file pruned") for o in fits[-1].outputs)
    # Every output pruned is counted by the preparation that pruned it.
    pruned = [e for e in app.history(session_id) if isinstance(e, Session.ToolsPruned)]
    assert sum(b["pruned_outputs"] for b in bodies) == sum(len(e.outputs) for e in pruned)
    assert audit_session(app, session_id).ok


def write_loop(
    app: Sessions, session_id: UUID, steps: int, lines: int | Callable[[int], int] = 12
) -> list[dict[str, Any]]:
    """A prompt, then `steps` tool calls led by one thinking block, each with a small output
    (head and tail are the whole of it); the request prepared after each result, checked,
    each also saying how many outputs its preparation pruned (`pruned_outputs`)."""
    app.append_message(session_id, Message.user("Write the handlers, one file each."))
    bodies = []
    for i in range(steps):
        head = [ThinkingBlock("Planning the files.", "sig-loop")] if i == 0 else []
        app.prepare_request(session_id)
        app.record_reply(
            session_id,
            Message.assistant(
                *head, ToolUseBlock(f"toolu_{i:03d}", "write_file", {"path": f"h{i}.py"})
            ),
        )
        count = lines(i) if callable(lines) else lines
        output = "\n".join(f"wrote line {k} of h{i}.py" for k in range(count))
        app.append_message(session_id, Message.user(ToolResultBlock(f"toolu_{i:03d}", output)))
        prepared = app.prepare_request(session_id)
        bodies.append(
            {**check_request(prepared, COUNTER), "pruned_outputs": prepared.pruned_outputs}
        )
    return bodies


def small_session(app: Sessions, **settings: Any) -> UUID:
    return app.start_session(
        model="claude-sonnet-4-5",
        context_window=4_000,
        max_output_tokens=1_000,
        system="You are a coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(**settings),
    )


def cut_inside(app: Sessions, session_id: UUID, bodies: list[dict[str, Any]]) -> None:
    """The loop's last requests were cut inside it: the reply that opened it was summarized
    with its thinking, so the request goes without thinking until the next prompt."""
    body = bodies[-1]
    assert body["messages"][1]["content"][0]["type"] == "tool_use"
    assert app.prepare_request(session_id).context.thinking_paused
    assert audit_session(app, session_id).ok


def test_without_the_outputs_by_name_the_same_loop_is_cut_inside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The control: when the older outputs stay as they are, the loop no longer fits whole
    and is cut inside (it used to be refused at every request: stuck on accepted messages)."""
    monkeypatch.setattr("abridged.domain.planner.plan_fit", lambda view: None)
    app = real_app()
    session_id = small_session(app)
    cut_inside(app, session_id, write_loop(app, session_id, 30))


def test_the_last_resort_leaves_the_outputs_of_a_tool_to_keep() -> None:
    app = real_app()
    session_id = small_session(app, tool_policies={"write_file": "keep"})
    cut_inside(app, session_id, write_loop(app, session_id, 30))
    assert not any(isinstance(e, Session.ToolsPruned) for e in app.history(session_id))


class OpenFiles:
    """Per-turn content: what the host sends with every request, never stored."""

    def content(self, session_id: UUID) -> str:
        return "Open files:\n" + "\n".join(f"src/module_{k}.py (modified)" for k in range(60))


def test_the_last_resort_with_per_turn_content_is_sent_and_audits_clean() -> None:
    app = Sessions(
        counter=COUNTER,
        summarizer=ExtractiveSummarizer(COUNTER),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        context_provider=OpenFiles(),
    )
    session_id = small_session(app)
    body = write_loop(app, session_id, 24)[-1]

    assert "src/module_59.py" in str(body["messages"][-1])
    assert any(
        isinstance(e, Session.ToolsPruned) and e.reason.startswith("to fit")
        for e in app.history(session_id)
    )
    assert audit_session(app, session_id).ok


def test_a_preparation_counts_the_outputs_of_its_prune_and_of_the_last_resort() -> None:
    """With `keep_none` a prune runs before the decision; when the request still overflows,
    the last resort follows in the same preparation, and both are counted."""
    app = real_app()
    session_id = small_session(app, tool_output_mode="keep_none")
    bodies = write_loop(app, session_id, 30, lines=60)

    history = app.history(session_id)
    pruned = [e for e in history if isinstance(e, Session.ToolsPruned)]
    assert any(e.reason.startswith("to fit") for e in pruned)
    assert any(e.reason.startswith("keep_none") for e in pruned)
    assert sum(b["pruned_outputs"] for b in bodies) == sum(len(e.outputs) for e in pruned)
    assert audit_session(app, session_id).ok


WEB_SEARCH: dict[str, Any] = {"type": "web_search_20250305", "name": "web_search"}


def searched(call_id: str, hits: int) -> WireBlock:
    """A web search's result: `hits` pages, each with the encrypted content that goes back
    unchanged (about 300 tokens a page), which no reduction makes smaller."""
    pages = [
        {
            "type": "web_search_result",
            "url": f"https://example.com/releases/{k}",
            "title": f"Release notes {k}",
            "encrypted_content": base64.b64encode(random.Random(k).randbytes(300)).decode(),
            "page_age": None,
        }
        for k in range(hits)
    ]
    return WireBlock.of(
        {"type": "web_search_tool_result", "tool_use_id": call_id, "content": pages}
    )


@pytest.mark.parametrize("hits", [4, 12, 20, 22, 30])
def test_a_reply_calling_client_tools_beside_a_search_result_is_sent_or_refused_at_record(
    hits: int,
) -> None:
    # A reply that searched the web and then calls a client tool goes back with its results
    # whole but for their plain strings: the encrypted pages stay. Counted at the rough least
    # of a reduced block, a large search result was accepted and no request fit after it.
    app = real_app()
    session_id = app.start_session(
        model="claude-sonnet-4-5",
        context_window=8_000,
        max_output_tokens=1_000,
        system="You are a release engineer.",
        tools=(*TOOLS, WEB_SEARCH),
    )
    app.append_message(session_id, Message.user("Search the release notes and write a summary."))
    check_request(app.prepare_request(session_id), COUNTER)
    search = WireBlock.of(
        {
            "type": "server_tool_use",
            "id": "srvtoolu_1",
            "name": "web_search",
            "input": {"query": "release notes"},
        }
    )
    write = ToolUseBlock("toolu_1", "write_file", {"path": "notes.md", "content": "# Notes"})
    reply = Message.assistant(search, searched("srvtoolu_1", hits), write)
    before = len(app.history(session_id))

    try:
        app.record_reply(session_id, reply)
    except ContextTooSmallError:
        # What no view can reduce does not fit: nothing is written, and the turn goes on.
        assert len(app.history(session_id)) == before
        check_request(app.prepare_request(session_id), COUNTER)
        return
    app.append_message(session_id, Message.user(ToolResultBlock("toolu_1", "written")))
    check_request(app.prepare_request(session_id), COUNTER)
    app.record_reply(session_id, Message.assistant("The summary is in notes.md."))
    app.append_message(session_id, Message.user("Thanks. Anything else?"))
    check_request(app.prepare_request(session_id), COUNTER)
    audit = audit_session(app, session_id)
    assert audit.ok, audit.mismatches


def loop_of_mixed_outputs(app: Sessions, session_id: UUID, steps: int) -> None:
    """A loop led by one thinking block whose outputs alternate between about 300 and 65
    tokens (the small ones are what a build or a write prints)."""
    write_loop(app, session_id, steps, lambda i: 30 if i % 2 else 6)


def named_to_fit(app: Sessions, session_id: UUID) -> list[int]:
    """The tokens of each output the last resort showed by name."""
    return [
        o.tokens_before
        for e in app.history(session_id)
        if isinstance(e, Session.ToolsPruned) and e.reason.startswith("to fit")
        for o in e.outputs
    ]


def test_the_last_resort_leaves_small_outputs_whole() -> None:
    """A name saves an output under 80 tokens next to nothing, and would cost the loop its
    recent steps shown whole: the last resort names only the larger ones."""
    app = real_app()
    session_id = small_session(app)
    loop_of_mixed_outputs(app, session_id, 30)

    named = named_to_fit(app, session_id)
    assert named
    assert min(named) >= 80
    assert audit_session(app, session_id).ok


def test_a_session_stored_before_spare_small_outputs_names_them_as_before() -> None:
    stored = CompactionSettings().to_dict()
    del stored["spare_small_outputs"]
    assert not CompactionSettings.from_stored(stored).spare_small_outputs

    app = real_app()
    session_id = small_session(app, spare_small_outputs=False)
    loop_of_mixed_outputs(app, session_id, 30)

    assert min(named_to_fit(app, session_id)) < 80
    assert audit_session(app, session_id).ok
