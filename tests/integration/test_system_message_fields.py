"""A `role: "system"` message's own fields (SDK `BetaSystemMessageParam`): `clear_at` (a
turn-scoped instruction, shown only for the user turn it follows) and `output_config` (a
turn's effort), with or without content. They are stored and sent back as they came (the
model's thinking is bound to the messages before it), through a cold load and the proxy; a
model without system messages is sent the instruction as text only while it applies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest

from abridged import bootstrap, render_request
from abridged.adapters.http import ServeConfig
from abridged.adapters.http.history import stripped
from abridged.application.service import Sessions
from abridged.domain.errors import EmptyContentError, InvalidMessageError
from tests.support.anthropic_rules import assert_valid_request
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.serve import served
from tests.support.thinking_binding import binding_failures, sign_reply

TURN_ONLY = {
    "role": "system",
    "content": "Answer this one in French.",
    "clear_at": "next_user_message",
}
EFFORT = {"role": "system", "output_config": {"effort": "low"}}
BOTH = {
    "role": "system",
    "clear_at": "never",
    "content": [{"type": "text", "text": "From now on, cite file paths."}],
    "output_config": {"effort": "high"},
}
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "What does the parser do?"},
    TURN_ONLY,
    {"role": "assistant", "content": [{"type": "text", "text": "Il lit le fichier."}]},
    {"role": "user", "content": "And the lexer?"},
    BOTH,
    {"role": "assistant", "content": [{"type": "text", "text": "See src/lexer.py."}]},
    {"role": "user", "content": "Quick: which line?"},
    EFFORT,
]


def as_sent(message: dict[str, Any]) -> dict[str, Any]:
    """A message as the API reads it: string content as one text block."""
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": [{"type": "text", "text": content}]}
    return message


def start(sessions: Sessions, model: str) -> Any:
    session_id = sessions.start_session(model=model, max_output_tokens=1_024, system="s")
    for message in HISTORY:
        if message["role"] == "assistant":
            sessions.record_reply(session_id, message)
        else:
            sessions.append_message(session_id, message)
    return session_id


def rendered(sessions: Sessions, session_id: Any) -> list[dict[str, Any]]:
    prepared = sessions.prepare_request(session_id)
    body = render_request(prepared.context, model=prepared.model, max_tokens=prepared.max_tokens)
    assert_valid_request(body)
    return list(body["messages"])


def test_the_fields_are_stored_and_sent_as_they_came_also_after_a_cold_load(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.sqlite3"
    with bootstrap(db) as sessions:
        session_id = start(sessions, "claude-opus-4-8")
        sent = rendered(sessions, session_id)
    assert [stripped(m) for m in sent] == [as_sent(m) for m in HISTORY]
    assert [k for k in sent[4] if k not in ("role", "content")] == ["clear_at", "output_config"]
    with bootstrap(db) as again:
        assert rendered(again, session_id) == sent


def test_a_model_without_system_messages_reads_a_turn_scoped_one_only_in_its_turn() -> None:
    with bootstrap(":memory:") as sessions:
        session_id = start(sessions, "claude-sonnet-4-6")
        sent = rendered(sessions, session_id)
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
    texts = [b.get("text", "") for m in sent for b in m["content"]]
    assert not any("French" in text for text in texts)  # its turn is over
    assert sum("cite file paths" in text for text in texts) == 1
    # The effort of a turn has no form in a user message: nothing is added for it.
    assert sent[-1]["content"][-1]["text"] == "Quick: which line?"


def test_on_a_model_that_binds_thinking_a_folded_turn_scoped_one_stays() -> None:
    # A model the table does not know gets the strictest row: it binds thinking and takes
    # no system message. The reply after the folded text was produced under it, so the text
    # stays when its turn is over; removed, the reply's thinking would be refused.
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "What does the parser do?"},
        TURN_ONLY,
    ]
    with bootstrap(":memory:") as sessions:
        session_id = sessions.start_session(model="claude-opus-9", max_output_tokens=1_024)
        for message in history:
            sessions.append_message(session_id, message)
        first = sessions.prepare_request(session_id)
        body = render_request(first.context, model="claude-opus-9", max_tokens=1_024)
        reply = [
            {"type": "thinking", "thinking": "Reply in French.", "signature": "unsigned"},
            {"type": "text", "text": "Il lit le fichier."},
        ]
        sessions.record_reply(session_id, {"role": "assistant", "content": sign_reply(body, reply)})
        sessions.append_message(session_id, {"role": "user", "content": "And the lexer?"})
        sent = rendered(sessions, session_id)
    texts = [b.get("text", "") for b in sent[0]["content"]]
    assert sum("French" in text for text in texts) == 1
    assert binding_failures({**body, "messages": sent}) == []


def test_fields_the_api_refuses_are_refused() -> None:
    with bootstrap(":memory:") as sessions:
        session_id = sessions.start_session(model="claude-opus-4-8", max_output_tokens=1_024)
        sessions.append_message(session_id, {"role": "user", "content": "Hi"})
        with pytest.raises(InvalidMessageError, match="clear_at"):
            sessions.append_message(
                session_id, {"role": "system", "content": "x", "clear_at": "sometimes"}
            )
        with pytest.raises(EmptyContentError, match="output_config"):
            sessions.append_message(session_id, {"role": "system", "output_config": {}})
        with pytest.raises(InvalidMessageError, match="output_config"):
            sessions.append_message(session_id, {"role": "system", "output_config": "low"})
        assert len(sessions.session(session_id).entries) == 1


def test_the_proxy_passes_the_fields_through_and_keeps_one_session(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    db = str(tmp_path / "p.sqlite3")
    headers = {"x-api-key": TEST_API_KEY, "x-abridged-session": "fields"}

    def post(messages: list[dict[str, Any]]) -> dict[str, Any]:
        request = {"model": "claude-opus-4-8", "max_tokens": 64, "messages": messages}
        answer = httpx2.post(f"{url}/v1/messages", json=request, headers=headers, timeout=30)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    with served(ServeConfig(db=db, upstream=fake_anthropic.base_url)) as url:
        history = HISTORY[:2]
        for more in (HISTORY[3:5], HISTORY[6:]):
            reply = post(history)  # the client's whole history each time, one turn longer
            history = [*history, {"role": "assistant", "content": reply["content"]}, *more]
        post(history)
    assert not fake_anthropic.violations
    sent = fake_anthropic.requests_to()[-1].body["messages"]
    assert [stripped(m) for m in sent] == [as_sent(m) for m in history]
    assert sent[4]["output_config"] == {"effort": "high"}
    assert "content" not in sent[-1]
    with bootstrap(db) as sessions:
        assert len(sessions.list_sessions().sessions) == 1  # no branch: nothing diverged
