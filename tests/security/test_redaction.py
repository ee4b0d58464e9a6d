"""Secrets in a conversation are not copied forward: every text derived from the messages
(the summarizer's input, the facts ledger, summaries, the next request, the HTML report,
`history` and `audit --json`, metrics, logs at DEBUG) shows a placeholder naming the kind."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from uuid import UUID

import pytest
from click.testing import CliRunner

from abridged import DefaultRedactor, NoRedaction, SecretPattern, bootstrap
from abridged.adapters.cli import main
from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.application.ports import Summary
from abridged.application.service import Sessions
from abridged.domain.messages import Message, ToolResultBlock, ToolUseBlock
from abridged.domain.redaction import DEFAULT_PATTERNS, redact_message
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS
from tests.support.fakes import FakeTokenCounter

AWS_KEY = "AKIAZ7Q3WXEXAMPLE4KJ"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEK1"
ANTHROPIC_KEY = "sk-ant-api03-Q1w2E3r4T5y6U7i8O9p0AsDfGhJkLzXcVbNm"
OPENAI_KEY = "sk-proj-4f9a1c2e8b7d6f5a4c3b2a1908f7e6d5c4b3a291"
GITHUB_TOKEN = "ghp_R2d2C3poBb8Yoda1Luke2Leia3Han4SoloX9"
BEARER = "9f8e7d6c5b4a39281706f5e4d3c2b1a0ffee"
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB"
DB_PASSWORD = "Tr0ub4dor-3xyz"
URL_PASSWORD = "Sup3rS3cretPw"
PROMPT_PASSWORD = "hunter2hunter2"
INPUT_PASSWORD = "c0rrect-h0rse-battery"
INPUT_API_KEY = "a1b2c3d4e5f6g7h8i9j0klmnop"

SECRETS = {
    "aws-access-key": AWS_KEY,
    "aws-secret-key": AWS_SECRET,
    "anthropic-api-key": ANTHROPIC_KEY,
    "openai-api-key": OPENAI_KEY,
    "github-token": GITHUB_TOKEN,
    "bearer-token": BEARER,
    "private-key": KEY_BODY,
    "password": DB_PASSWORD,
    "url-password": URL_PASSWORD,
    "password (prompt)": PROMPT_PASSWORD,
    "password (tool input)": INPUT_PASSWORD,
    "api key (tool input)": INPUT_API_KEY,
}

ENV_OUTPUT = f"""\
AWS_ACCESS_KEY_ID={AWS_KEY}
AWS_SECRET_ACCESS_KEY={AWS_SECRET}
DB_PASSWORD={DB_PASSWORD}
GITHUB_TOKEN={GITHUB_TOKEN}
DATABASE_URL=postgres://app:{URL_PASSWORD}@db.internal:5432/prod
-----BEGIN OPENSSH PRIVATE KEY-----
{KEY_BODY}
-----END OPENSSH PRIVATE KEY-----
Error: authentication failed for key {AWS_KEY} with {ANTHROPIC_KEY}
"""


def conversation() -> list[Message]:
    """A turn that reads a `.env`, runs commands with credentials, and fails with an error
    quoting a key; then a clean turn (the one kept verbatim)."""
    return [
        Message.user(
            f"Deploy with key {AWS_KEY} and {ANTHROPIC_KEY}; my password is {PROMPT_PASSWORD}\n"
            "then check the logs."
        ),
        Message.assistant(
            "I will read the environment first.",
            ToolUseBlock("t1", "bash", {"command": "cat .env"}),
        ),
        Message.user(ToolResultBlock("t1", ENV_OUTPUT, is_error=True)),
        Message.assistant(
            ToolUseBlock(
                "t2",
                "bash",
                {
                    "command": f"curl -H 'Authorization: Bearer {BEARER}' "
                    f"https://app:{URL_PASSWORD}@api.internal/v1 -d key={OPENAI_KEY}"
                },
            )
        ),
        Message.user(ToolResultBlock("t2", f"Error: 401 for token {GITHUB_TOKEN}")),
        # A tool's input names its secrets by their keys, not by a format of their own.
        Message.assistant(
            ToolUseBlock(
                "t3",
                "connect_database",
                {"host": "db.internal", "password": INPUT_PASSWORD, "api_key": INPUT_API_KEY},
            )
        ),
        Message.user(ToolResultBlock("t3", "connected")),
        # Its own text names a secret glued to a name (the ledger keeps such words whole).
        Message.assistant(
            f"I decided to rotate {AWS_KEY} because it leaked; the replica stays at "
            f"postgres://svc:{URL_PASSWORD}@pg-2.internal:6432/orders, cfg.DB_PASSWORD="
            f"{DB_PASSWORD}, key@{OPENAI_KEY}."
        ),
        Message.user("Now write the release notes."),
        Message.assistant("Done: the release notes are written."),
        Message.user("Thanks. Anything else?"),
    ]


class RecordingSummarizer:
    """The extractive summarizer, recording everything it was given."""

    def __init__(self) -> None:
        self.inner = ExtractiveSummarizer(FakeTokenCounter())
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
        given = json.dumps([m.to_wire() for m in messages])
        self.seen.append(given + repr((earlier, instructions)))
        return self.inner.summarize(
            messages, max_tokens=max_tokens, instructions=instructions, earlier=earlier
        )


class RecordingMetrics:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def add(self, name: str, value: int = 1, attributes: Mapping[str, str] | None = None) -> None:
        self.seen.append(f"{name} {value} {attributes}")

    def record(self, name: str, value: float, attributes: Mapping[str, str] | None = None) -> None:
        self.seen.append(f"{name} {value} {attributes}")


def leaked(text: str) -> list[str]:
    """The kinds of secret whose value appears in `text`."""
    return [kind for kind, value in SECRETS.items() if value in text]


def run_session(app: Sessions) -> tuple[UUID, list[str]]:
    """Starts a session, feeds the conversation, compacts twice (the second folds the
    first chunk) and returns the id and every request body sent after the compactions."""
    session_id = app.start_session(
        model="claude-test",
        context_window=200_000,
        max_output_tokens=1_000,
        tools=TOOLS,
        system="You are a careful agent.",
        settings=CompactionSettings(
            keep_recent_turns=1, keep_recent_tokens=1, summary_strategy="update"
        ),
    )
    messages = conversation()
    for message in messages[:9]:
        if message.role.value == "user":
            app.append_message(session_id, message)
        else:
            app.record_reply(session_id, message)
    app.compact(session_id, instructions=f"keep the key {AWS_KEY}")
    for message in messages[9:]:
        if message.role.value == "user":
            app.append_message(session_id, message)
        else:
            app.record_reply(session_id, message)
    app.compact(session_id)
    prepared = app.prepare_request(session_id)
    bodies = [json.dumps([m.to_wire() for m in prepared.context.messages])]
    return session_id, bodies


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "sessions.sqlite3"


def test_no_secret_of_any_kind_leaves_the_store_in_derived_text(
    store: Path, caplog: pytest.LogCaptureFixture
) -> None:
    summarizer = RecordingSummarizer()
    metrics = RecordingMetrics()
    caplog.set_level(logging.DEBUG)
    app = bootstrap(store, counter=FakeTokenCounter(), summarizer=summarizer, metrics=metrics)
    try:
        session_id, bodies = run_session(app)
        session = app.session(session_id)
        events = app.history(session_id)
        ledger_entries = [
            entry.text
            for event in events
            if type(event).__name__ == "LedgerUpdated"
            for entry in (*event.entries, *event.dropped)  # type: ignore[attr-defined]
        ]
        summaries = [
            event.summary.text  # type: ignore[attr-defined]
            for event in events
            if type(event).__name__ == "CompactionCompleted"
        ]
    finally:
        app.close()
    assert len(summaries) == 2
    assert ledger_entries
    derived = {
        "summarizer input": "\n".join(summarizer.seen),
        "ledger entries (LedgerUpdated)": "\n".join(ledger_entries),
        "ledger segments": "\n".join(session.ledger_segments),
        "summaries": "\n".join(summaries),
        "next request": "\n".join(bodies),
        "metrics": "\n".join(metrics.seen),
        "logs at DEBUG": caplog.text,
    }
    for where, text in derived.items():
        assert leaked(text) == [], f"secrets in the {where}"
    # What was there is still said, by kind.
    placeholders = derived["ledger segments"] + derived["summaries"]
    for kind in ("aws-access-key", "anthropic-api-key", "password", "github-token"):
        assert f"[redacted {kind}]" in placeholders

    runner = CliRunner()
    outputs = {
        "history": runner.invoke(main, ["history", str(session_id), "--db", str(store)]),
        "history --json": runner.invoke(
            main, ["history", str(session_id), "--db", str(store), "--json"]
        ),
        "audit --json": runner.invoke(
            main, ["audit", str(session_id), "--db", str(store), "--json", "--checks"]
        ),
    }
    report = store.with_name("report.html")
    outputs["report"] = runner.invoke(
        main, ["report", str(session_id), "--db", str(store), "--out", str(report)]
    )
    for command, result in outputs.items():
        assert result.exit_code == 0, (command, result.output)
        assert leaked(result.output) == [], f"secrets printed by {command}"
    assert leaked(report.read_text(encoding="utf-8")) == []


def test_a_store_written_without_redaction_prints_redacted(store: Path) -> None:
    # The host's choice (or a store from before redaction): the events hold the secrets;
    # what the command line prints of them does not.
    app = bootstrap(store, counter=FakeTokenCounter(), redactor=NoRedaction())
    try:
        session_id, _ = run_session(app)
        summaries = [
            e.summary.text  # type: ignore[attr-defined]
            for e in app.history(session_id)
            if type(e).__name__ == "CompactionCompleted"
        ]
    finally:
        app.close()
    assert leaked("\n".join(summaries)), "the unredacted store should hold secrets"
    runner = CliRunner()
    for args in (["history"], ["history", "--json"], ["audit", "--json", "--checks"]):
        result = runner.invoke(main, [args[0], str(session_id), "--db", str(store), *args[1:]])
        assert result.exit_code == 0, result.output
        # Printing can only redact what it recognizes: an AWS secret that the stored
        # summary already listed apart from its key name (as a path, under Files) reads as
        # any other string. Hence redaction in the service, before anything is derived.
        assert leaked(result.output) in ([], ["aws-secret-key"]), args


def test_a_host_adds_its_own_kind_of_secret(store: Path) -> None:
    redactor = DefaultRedactor(extra=[SecretPattern("employee-id", r"\bEMP-\d{6}\b")])
    app = bootstrap(store, counter=FakeTokenCounter(), redactor=redactor)
    try:
        session_id = app.start_session(
            model="claude-test",
            context_window=200_000,
            max_output_tokens=1_000,
            tools=TOOLS,
            settings=CompactionSettings(keep_recent_turns=1, keep_recent_tokens=1),
        )
        app.append_message(session_id, Message.user(f"Look up EMP-123456 with {AWS_KEY}."))
        app.record_reply(session_id, Message.assistant("Found them."))
        app.append_message(session_id, Message.user("Next."))
        app.compact(session_id)
        session = app.session(session_id)
    finally:
        app.close()
    text = "\n".join([*session.ledger_segments, *(c.text for c in session.summaries)])
    assert "EMP-123456" not in text
    assert AWS_KEY not in text
    assert "[redacted employee-id]" in text
    assert "[redacted aws-access-key]" in text


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"key={AWS_KEY}", "aws-access-key"),
        (f"aws_secret_access_key: {AWS_SECRET}", "aws-secret-key"),
        (ANTHROPIC_KEY, "anthropic-api-key"),
        (OPENAI_KEY, "openai-api-key"),
        (GITHUB_TOKEN, "github-token"),
        (f"Authorization: Bearer {BEARER}", "bearer-token"),
        (f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----", None),
        (f"-----BEGIN PRIVATE KEY-----\n{KEY_BODY}", None),  # cut before its end
        (f"export DB_PASSWORD='{DB_PASSWORD}'", "password"),
        (f"mysql://root:{URL_PASSWORD}@localhost/app", "url-password"),
        (f"STRIPE_SECRET={DB_PASSWORD}", "secret"),
        (f'{{"api_key": "{DB_PASSWORD}"}}', "secret"),
        # Named by a key or a variable in the forms tools print and commands take.
        (f'{{"name": "app", "secret": "{DB_PASSWORD}"}}', "secret"),
        (f'  "refresh_token": "{DB_PASSWORD}",', "secret"),
        (f"client:\n  token: {DB_PASSWORD}", "secret"),
        (f"export github_token={DB_PASSWORD}", "secret"),
        (f"cd app && PGPASSWORD={DB_PASSWORD} psql -h db", "password"),
        (f"curl -u admin:{DB_PASSWORD} https://api.internal/v1", "password"),
        (f"deploy --token {DB_PASSWORD} --env prod", "secret"),
        (f"docker login --password={DB_PASSWORD} registry", "password"),
        (f"GET https://api.example.com/v1/items?page=2&access_token={DB_PASSWORD}", "secret"),
        (f"postgres://app:p@{DB_PASSWORD}@db.internal/prod", "url-password"),
        # An environment list's pairs, cookies and a password fixed to its flag.
        (f'[{{"name": "DB_TOKEN", "value": "{DB_PASSWORD}"}}]', "secret"),
        (f"env:\n  - name: STRIPE_API_KEY\n    value: '{DB_PASSWORD}'", "secret"),
        (f"Cookie: session={DB_PASSWORD}; theme=dark", "cookie"),
        (f"< Set-Cookie: sid={DB_PASSWORD}; Path=/; HttpOnly", "cookie"),
        (f"curl -b 'sid={DB_PASSWORD}' https://app.internal/me", "cookie"),
        (f"mysqldump -h db -P 3306 -u root -p{DB_PASSWORD} app > app.sql", "password"),
        # A shell expansion's default value, redacted without the brace that closes it.
        (f'curl -H "x-api-key: ${{ANTHROPIC_API_KEY:-{DB_PASSWORD}}}" https://x', "secret"),
    ],
)
def test_each_default_kind_becomes_its_stable_placeholder(text: str, kind: str | None) -> None:
    redacted = DefaultRedactor().redact(text)
    assert leaked(redacted) == []
    kind = kind or "private-key"
    assert f"[redacted {kind}]" in redacted
    assert DefaultRedactor().redact(redacted) == redacted  # stable: nothing redacted twice


@pytest.mark.parametrize(
    "command",
    [
        'echo "ALCHEMY_API_KEY set: ${ALCHEMY_API_KEY:+yes}"',
        'echo "${OPENAI_API_KEY:?missing}" && npm test',
        'test -n "${GITHUB_TOKEN:-}" && echo ok',
        'export API_KEY="${VAULT_API_KEY:-$FALLBACK_KEY}"',
        "export API_TOKEN=$(cat /run/secrets/token)",
    ],
)
def test_a_shell_expansion_that_holds_no_secret_is_left_as_written(command: str) -> None:
    # A command the ledger quotes must still run: `${KEY:+yes}` only tests that the key is
    # set, `$OTHER` and `$(cat …)` name where the secret is kept.
    assert DefaultRedactor().redact(command) == command


@pytest.mark.parametrize(
    "text",
    [
        "Detection matches Token Program/Token-2022 instruction indices (4=freeze).",
        "Inject the Token AuthenticationService into the handler.",
    ],
)
def test_words_after_token_are_not_a_credential(text: str) -> None:
    # A credential has a long run of letters and digits, and a digit or many characters: a
    # prompt about Solana's Token Program is not one, and the ledger must quote it as given.
    assert DefaultRedactor().redact(text) == text


def test_a_shell_expansions_default_is_redacted_and_its_braces_kept() -> None:
    redacted = DefaultRedactor().redact(f'export API_KEY="${{API_KEY:-{DB_PASSWORD}}}"')
    assert leaked(redacted) == []
    assert redacted == 'export API_KEY="${API_KEY:-[redacted secret]}"'


def test_a_tool_inputs_secrets_are_found_by_their_keys_at_any_depth() -> None:
    call = ToolUseBlock(
        "t1",
        "deploy",
        {
            "token": DB_PASSWORD,
            "steps": [{"args": ["push"], "private_key": URL_PASSWORD}],
            "auth": {"user": "app", "db_pass": PROMPT_PASSWORD, "secret": INPUT_PASSWORD},
        },
    )
    redacted = redact_message(Message.assistant(call), DefaultRedactor().redact)
    text = json.dumps(redacted.to_wire())
    assert leaked(text) == [], text
    assert '"user": "app"' in text  # a key that names no secret keeps its value


def test_the_citations_of_a_text_are_redacted_with_its_text() -> None:
    reply = Message.from_wire(
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "The deploy password is in the runbook.",
                    "citations": [
                        {
                            "type": "char_location",
                            "cited_text": f"DB_PASSWORD={DB_PASSWORD}",
                            "document_index": 0,
                            "document_title": "runbook",
                            "start_char_index": 0,
                            "end_char_index": 26,
                        }
                    ],
                }
            ],
        }
    )
    redacted = redact_message(reply, DefaultRedactor().redact)
    text = json.dumps(redacted.to_wire())
    assert leaked(text) == []
    assert "[redacted password]" in text


def test_ordinary_text_is_left_alone() -> None:
    text = (
        "max_tokens=1024, MAX_OUTPUT_TOKENS=8192; the token budget is 200k.\n"
        "git clone https://github.com/acme/app.git && pytest tests/test_keys.py\n"
        "KeyError: 'SECRET_KEY' in config/settings.py line 12\n"
        "tokenizer: cl100k_base, token_count = 1234, bypass: true\n# PASS: 120\n"
        "git push -u origin main && docker run -u 1000:1000 app --token-file /run/token\n"
        "git checkout -b fix-login && mysql -u root -p appdb\n"
        '[{"name": "MAX_TOKENS", "value": "4096"}, {"name": "LOG_LEVEL", "value": "debug"}]\n'
        "- name: max_tokens\n  value: 4096\nthe cookie jar: empty"
    )
    assert DefaultRedactor().redact(text) == text
    assert all(p.kind for p in DEFAULT_PATTERNS)
