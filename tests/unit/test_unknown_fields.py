"""Fields this version does not model, on block types it does: kept and sent back.

The API adds fields to the blocks it returns (a tool call made from code execution has a
`caller`); a request that sends such a block back must send it as it came, or the call is
no longer the one the model made. Only `cache_control` is not kept: a request's breakpoints
are placed when it is rendered.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.transcodings import MessageAsJSON
from abridged.domain.messages import Message
from abridged.domain.redaction import redact_message
from tests.conftest import MakeApp
from tests.support.builders import TOOLS, tool_id, words
from tests.support.checks import check_request

BASES: dict[str, dict[str, Any]] = {
    "text": {"type": "text", "text": "The deploy passed."},
    "image": {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
    "tool_use": {"type": "tool_use", "id": "toolu_01", "name": "run_command", "input": {}},
    "tool_result": {"type": "tool_result", "tool_use_id": "toolu_01", "content": "ok"},
    "thinking": {"type": "thinking", "thinking": "Check the log.", "signature": "c2ln"},
    "redacted_thinking": {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
}
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
MODELLED = {key for base in BASES.values() for key in base} | {"citations", "is_error"}
UNMODELLED = st.text(min_size=1, max_size=12).filter(
    lambda k: k != "cache_control" and k not in MODELLED
)


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(sorted(BASES)),
    fields=st.dictionaries(UNMODELLED, JSON_VALUES, min_size=1, max_size=3),
)
def test_a_field_not_modelled_comes_back_with_its_block(kind: str, fields: dict[str, Any]) -> None:
    wire = {**BASES[kind], **fields}
    role = "assistant" if kind in {"text", "tool_use", "thinking", "redacted_thinking"} else "user"
    message = Message.from_wire({"role": role, "content": [wire]})

    assert message.content[0].to_wire() == wire
    # As stored: the event's transcoding gives the same block back.
    transcoding = MessageAsJSON()
    assert transcoding.decode(transcoding.encode(message)) == message
    # Redaction reads the unmodelled fields' strings too, and keeps the rest as it was.
    redacted = redact_message(message, lambda s: s.replace("secret", "[redacted]"))
    assert redacted.content[0].to_wire() == wire


def test_a_cache_control_is_not_kept_as_a_field() -> None:
    wire = {**BASES["text"], "cache_control": {"type": "ephemeral"}}
    assert Message.from_wire({"role": "user", "content": [wire]}).to_wire()["content"] == [
        BASES["text"]
    ]


def test_a_reply_with_fields_not_modelled_is_sent_back_unchanged_and_counted(
    make_app: MakeApp,
) -> None:
    counter = TiktokenCounter()
    app = make_app(counter=counter)
    session_id = app.start_session(
        model="claude-opus-4-8",
        context_window=16_000,
        max_output_tokens=4_000,
        system="You deploy services.",
        tools=TOOLS,
    )
    sent: list[dict[str, Any]] = []
    for step in range(30):
        app.append_message(session_id, Message.user(f"Deploy stage {step}. {words(300)}"))
        check_request(app.prepare_request(session_id), counter)
        call = tool_id()
        reply = {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Stage {step}.", "annotations": {"step": step}},
                {
                    "type": "tool_use",
                    "id": call,
                    "name": "run_command",
                    "input": {"command": f"./deploy.sh {step}"},
                    "caller": {"type": "code_execution_20250825", "tool_id": f"srvtoolu_{step}"},
                },
            ],
        }
        app.record_reply(session_id, Message.from_wire(reply))
        app.append_message(
            session_id,
            Message.from_wire(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call, "content": "ok"}],
                }
            ),
        )
        body = check_request(app.prepare_request(session_id), counter)
        sent.append(body)
        app.record_reply(session_id, Message.assistant(f"Stage {step} deployed."))
        last_call = body["messages"][-2]["content"]
        assert [_plain(b) for b in last_call] == reply["content"]

    assert "conversation-summary" in json.dumps(sent[-1]["messages"][0]), (
        "the session should have compacted"
    )


def _plain(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}
