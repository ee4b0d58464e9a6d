"""Secrets where the earlier tests did not put them (docs/security.md, "A red-team pass"): as
a tool input's keys, numbers and list items, in a quoted value of several words, URL-encoded,
in an image's URL, in a `system` message, and written by the summarizer itself."""

from __future__ import annotations

import json
from uuid import UUID

import pytest

from abridged import DefaultRedactor
from abridged.application.redaction import redact_each
from abridged.application.service import Sessions
from abridged.domain.messages import ImageBlock, Message, ToolResultBlock, ToolUseBlock
from abridged.domain.settings import CompactionSettings
from tests.conftest import MakeApp
from tests.support.builders import TOOLS
from tests.support.red_team import Recording

REDACTOR = DefaultRedactor()
GITHUB_TOKEN = "ghp_R2d2C3poBb8Yoda1Luke2Leia3Han4SoloX9"
HEX_KEY = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
PIN = 48291375
SIGNATURE = "4c1b2a39d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3"
ANTHROPIC_KEY = "sk-ant-api03-Q1w2E3r4T5y6U7i8O9p0AsDfGhJkLzXcVbNm"
PASSPHRASE = "melon staple 8 river"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("export PGPASSWORD='correct horse battery 9'", "horse battery"),
        ('password: "staple gun 42 sunshine"', "gun 42 sunshine"),
        ('DB_PASSWORD="a b c 1"', "a b c 1"),
        ('{"password": "abc\\"def123"}', "def123"),
        ('{\\"api_key\\": \\"x y z 9\\"}', "y z 9"),
        ("client_secret = 'two words 7'", "words 7"),
        ("next=%2Flogin%3Fpassword%3Dhunter2x9%26lang%3Den", "hunter2x9"),
        ("%22password%22%3A%22hunter2x9%22", "hunter2x9"),
        ("redirect=%2Fcb%3Fapi_key%3D" + HEX_KEY, HEX_KEY),
        ("h=Authorization%3A%20Bearer%20" + HEX_KEY, HEX_KEY),
    ],
)
def test_a_value_is_redacted_whole_in_quotes_and_url_encoded(text: str, secret: str) -> None:
    """A quoted passphrase kept its words after the first; a URL-encoded `password%3D…`
    was not read at all."""
    redacted = REDACTOR.redact(text)
    assert secret not in redacted
    assert "[redacted " in redacted


def test_a_quoted_value_of_one_word_reads_as_before() -> None:
    assert REDACTOR.redact("password = 'hunter2x9'") == "password = '[redacted password]'"
    assert REDACTOR.redact("password: str") == "password: str"


def _input(value: dict[str, object]) -> object:
    message = Message.assistant(ToolUseBlock("t1", "configure", value))
    return redact_each(REDACTOR, message).tool_uses[0].input


def test_a_tool_inputs_keys_numbers_and_lists_are_redacted() -> None:
    """A map of tokens to their owners names its secrets by its keys; a PIN under a key
    naming a password is a number; a key naming a secret may hold a list."""
    redacted = _input(
        {
            "tokens": {GITHUB_TOKEN: "alice", "ghp_" + "b" * 36: "bob"},
            "pin_password": PIN,
            "api_key": [HEX_KEY],
            "retries": 3,
            "password_required": True,
        }
    )
    text = json.dumps(redacted)
    assert GITHUB_TOKEN not in text
    assert "b" * 36 not in text
    assert str(PIN) not in text
    assert HEX_KEY not in text
    # Two keys that read the same once redacted keep a value each; the rest is as it was.
    assert redacted == {
        "tokens": {"[redacted github-token]": "alice", "[redacted github-token] (2)": "bob"},
        "pin_password": "[redacted password]",
        "api_key": ["[redacted secret]"],
        "retries": 3,
        "password_required": True,
    }


def test_an_images_url_is_redacted() -> None:
    url = (
        "https://bucket.s3.amazonaws.com/shot.png?X-Amz-Credential=AKIAEXAMPLE"
        f"&X-Amz-Signature={SIGNATURE}"
    )
    message = Message.user(ImageBlock("url", url=url), "What does this show?")
    [image, _] = redact_each(REDACTOR, message).content
    assert isinstance(image, ImageBlock)
    assert SIGNATURE not in image.url
    assert image.url.startswith("https://bucket.s3.amazonaws.com/shot.png?X-Amz-")


def start(app: Sessions, system: str = "You are a careful agent.") -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=200_000,
        max_output_tokens=1_000,
        tools=TOOLS,
        system=system,
        settings=CompactionSettings(keep_recent_turns=1, keep_recent_tokens=1),
    )


def derived(app: Sessions, session_id: UUID, summarizer: Recording) -> dict[str, str]:
    events = app.history(session_id)
    entries = [
        e.text
        for event in events
        if type(event).__name__ == "LedgerUpdated"
        for e in (*event.entries, *event.dropped)  # type: ignore[attr-defined]
    ]
    summaries = [
        event.summary.text  # type: ignore[attr-defined]
        for event in events
        if type(event).__name__ == "CompactionCompleted"
    ]
    context = app.prepare_request(session_id).context
    given = [m.to_wire() for messages, _ in summarizer.calls for m in messages]
    return {
        "summarizer input": json.dumps(given, ensure_ascii=False),
        "ledger entries": "\n".join(entries),
        "ledger segments": "\n".join(app.session(session_id).ledger_segments),
        "summaries": "\n".join(summaries),
        "next request": json.dumps([m.to_wire() for m in context.messages], ensure_ascii=False),
    }


def test_no_secret_in_a_new_place_reaches_derived_text(make_app: MakeApp) -> None:
    summarizer = Recording()
    app = make_app(summarizer=summarizer)
    session_id = start(app)
    url = f"https://cdn.example.com/a.png?sig={SIGNATURE}"
    app.append_message(session_id, Message.user("Deploy it.", ImageBlock("url", url=url)))
    # A `system` message is an instruction the request keeps showing as written (it is the
    # conversation, like the system prompt); what is derived from it is redacted.
    app.append_message(session_id, Message.system(f"Ops note: DB_PASSWORD='{PASSPHRASE}'"))
    app.record_reply(
        session_id,
        Message.assistant(
            ToolUseBlock(
                "t1",
                "configure",
                {"tokens": {GITHUB_TOKEN: "alice"}, "pin_password": PIN, "api_key": [HEX_KEY]},
            )
        ),
    )
    output = 'password: "crane gun 42 sunshine"\nnext=%2Flogin%3Fpassword%3Dhunter2x9'
    app.append_message(session_id, Message.user(ToolResultBlock("t1", output)))
    app.record_reply(session_id, Message.assistant("Configured."))
    app.append_message(session_id, Message.user("Thanks, next task."))
    app.compact(session_id)
    assert summarizer.calls
    secrets = (GITHUB_TOKEN, str(PIN), HEX_KEY, SIGNATURE, "gun 42 sunshine", "hunter2x9")
    found = derived(app, session_id, summarizer)
    for where, text in found.items():
        for secret in secrets:
            assert secret not in text, f"{secret!r} in the {where}"
        if where != "next request":
            assert "melon staple" not in text, where


def test_a_secret_the_summarizer_writes_is_redacted_before_it_is_recorded(
    make_app: MakeApp,
) -> None:
    """A summarizer may join what no message held whole (a key given in two halves), or
    repeat a secret from its own prompt: its text is redacted before it is recorded."""
    summarizer = Recording(f"The deploy key is {ANTHROPIC_KEY}; the PIN password is {PIN}.")
    app = make_app(summarizer=summarizer)
    session_id = start(app, system="The PIN password is 48291375.")
    app.append_message(session_id, Message.user("The key starts sk-ant-api03-Q1w2E3r4T5y6"))
    app.record_reply(session_id, Message.assistant("Noted."))
    app.append_message(session_id, Message.user("and ends U7i8O9p0AsDfGhJkLzXcVbNm."))
    app.record_reply(session_id, Message.assistant("Noted too."))
    app.append_message(session_id, Message.user("Thanks, next task."))
    app.compact(session_id)
    found = derived(app, session_id, summarizer)
    for where in ("summaries", "next request", "ledger segments"):
        assert ANTHROPIC_KEY not in found[where], where
        assert str(PIN) not in found[where], where
    assert "[redacted anthropic-api-key]" in found["summaries"]
