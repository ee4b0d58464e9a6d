"""The default redactor against secrets as transcripts carry them (`redaction_corpus.LEAKS`),
ordinary text that only looks close (`ORDINARY`) and the shared real transcripts: no secret
reaches what is derived from a conversation, whatever surrounds it and whichever block holds
it; nothing else is touched."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abridged import DefaultRedactor, bootstrap
from abridged.application.ports import Summary
from abridged.domain.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from abridged.domain.redaction import redact_message
from abridged.domain.settings import CompactionSettings
from tests.security.redaction_corpus import LEAKS, ORDINARY, Leak
from tests.support.builders import TOOLS
from tests.support.fakes import FakeTokenCounter

TRANSCRIPTS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "transcripts"
REDACTOR = DefaultRedactor()


@pytest.mark.parametrize("leak", LEAKS, ids=[leak.name for leak in LEAKS])
def test_every_corpus_secret_is_redacted_and_stays_so(leak: Leak) -> None:
    redacted = REDACTOR.redact(leak.text)
    assert leak.secret not in redacted, redacted
    assert "[redacted " in redacted
    assert REDACTOR.redact(redacted) == redacted


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_that_looks_close_is_left_alone(text: str) -> None:
    assert REDACTOR.redact(text) == text


def test_a_tool_inputs_name_value_pairs_are_read_by_their_name() -> None:
    call = ToolUseBlock(
        "t1",
        "http_request",
        {
            "headers": [
                {"name": "Authorization", "value": "Basic YWRtaW46czNjcjN0"},
                {"key": "X-Api-Key", "value": "k3y-Of-The-Day"},
                {"name": "Accept", "value": "application/json"},
            ],
            "auth": "ZGVwbG95OkRrM3ItcDRzcy13MHJk",
            "pass": "hunter2xyz",
        },
    )
    text = json.dumps(redact_message(Message.assistant(call), REDACTOR.redact).to_wire())
    for secret in ("YWRtaW46czNjcjN0", "k3y-Of-The-Day", "ZGVwbG95OkRrM3ItcDRzcy13MHJk", "hunter2"):
        assert secret not in text, text
    assert "application/json" in text


@pytest.mark.transcripts
def test_the_shared_real_transcripts_hold_nothing_the_redactor_changes() -> None:
    # Fifteen real agent sessions (code, diffs, test logs, tool schemas, prose): none holds a
    # secret, so every redaction in them would be a false positive.
    paths = sorted(TRANSCRIPTS.glob("*.jsonl")) if TRANSCRIPTS.is_dir() else []
    if not paths:
        pytest.skip(f"no shared transcripts at {TRANSCRIPTS}")
    changed = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                message = Message.from_wire(json.loads(line))
                if redact_message(message, REDACTOR.redact) is not message:
                    changed.append(f"{path.name}:{number}")
    assert changed == []


class RecordingSummarizer:
    """Records everything it is given; writes a summary quoting all of it."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @property
    def name(self) -> str:
        return "recording"

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
        earlier: Sequence[str] = (),
    ) -> Summary:
        given = json.dumps([m.to_wire() for m in messages], ensure_ascii=False)
        self.seen.append(given + repr((earlier, instructions)))
        return Summary(text=given[:2_000], model="recording", input_tokens=1, output_tokens=1)


def _holding(kind: str, text: str, tool_id: str) -> list[Message]:
    """A turn whose `kind` of block holds `text`."""
    if kind == "text":
        return [Message.user(text), Message.assistant("Noted.")]
    if kind == "tool input":
        call = ToolUseBlock(tool_id, "bash", {"command": text, "env": {"note": text}})
        return [
            Message.user("Run it."),
            Message.assistant(call),
            Message.user(ToolResultBlock(tool_id, "ok")),
            Message.assistant("Done."),
        ]
    if kind == "tool result":
        call = ToolUseBlock(tool_id, "read_file", {"path": "config"})
        return [
            Message.user("Read the config."),
            Message.assistant(call),
            Message.user(ToolResultBlock(tool_id, (TextBlock(text),), is_error=True)),
            Message.assistant("Read."),
        ]
    return [
        Message.user("Think it over."),
        Message.assistant(ThinkingBlock(text, "c2lnbmF0dXJl"), TextBlock("Thought.")),
    ]


surroundings = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    leak=st.sampled_from(LEAKS),
    before=surroundings,
    after=surroundings,
    wrap=st.sampled_from(["plain", "line", "json", "json in text"]),
    kind=st.sampled_from(["text", "tool input", "tool result", "thinking"]),
)
def test_a_corpus_secret_anywhere_never_reaches_the_summarizer_or_the_next_request(
    tmp_path: Path, leak: Leak, before: str, after: str, wrap: str, kind: str
) -> None:
    if wrap == "plain":
        text = f"{before} {leak.text} {after}"
    elif wrap == "line":
        text = f"{before}\n{leak.text}\n{after}"
    elif wrap == "json":
        text = json.dumps({"before": before, "output": leak.text, "after": after})
    else:
        text = "result: " + json.dumps(json.dumps({"output": leak.text}))
    summarizer = RecordingSummarizer()
    app = bootstrap(
        tmp_path / f"{abs(hash((leak.name, before, after, wrap, kind)))}.sqlite3",
        counter=FakeTokenCounter(),
        summarizer=summarizer,
    )
    try:
        session_id = app.start_session(
            model="claude-test",
            context_window=200_000,
            max_output_tokens=1_000,
            tools=TOOLS,
            settings=CompactionSettings(keep_recent_turns=1, keep_recent_tokens=1),
        )
        for message in [*_holding(kind, text, "toolu_1"), Message.user("Next task.")]:
            if message.role.value == "user":
                app.append_message(session_id, message)
            else:
                app.record_reply(session_id, message)
        app.compact(session_id)
        prepared = app.prepare_request(session_id)
        request = json.dumps([m.to_wire() for m in prepared.context.messages], ensure_ascii=False)
        ledger = "\n".join(app.session(session_id).ledger_segments)
    finally:
        app.close()
    assert summarizer.seen
    for where, derived in {
        "summarizer input": "\n".join(summarizer.seen),
        "next request": request,
        "ledger": ledger,
    }.items():
        assert leak.secret not in derived, f"{leak.name} in the {where}"


def test_a_signed_thinking_block_in_the_retained_tail_is_sent_byte_for_byte(
    tmp_path: Path,
) -> None:
    # Redaction is for derived text: the tail is the conversation itself, and a thinking
    # block whose text changed would no longer match its signature.
    secret = LEAKS[0].secret
    thinking = ThinkingBlock(f"The token is {secret}, keep it out of logs.", "c2lnbmF0dXJl")
    app = bootstrap(tmp_path / "tail.sqlite3", counter=FakeTokenCounter())
    try:
        session_id = app.start_session(
            model="claude-test", context_window=200_000, max_output_tokens=1_000
        )
        app.append_message(session_id, Message.user("Check the deploy."))
        app.record_reply(session_id, Message.assistant(thinking, TextBlock("Checked.")))
        app.append_message(session_id, Message.user("Thanks."))
        prepared = app.prepare_request(session_id)
    finally:
        app.close()
    sent = [b for m in prepared.context.messages for b in m.content if isinstance(b, ThinkingBlock)]
    assert sent == [thinking]
