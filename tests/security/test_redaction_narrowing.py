"""A message's patterns narrowed to those that may match one of its strings redact it byte
for byte as all the patterns do, string by string: for the default patterns and a host's,
with hints, with literals, with neither, and with kinds whose placeholders hold another
pattern's literal."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abridged import DefaultRedactor
from abridged.application.redaction import redact_each, redact_messages
from abridged.domain.messages import (
    JSON,
    Block,
    Message,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireBlock,
)
from abridged.domain.redaction import (
    DEFAULT_PATTERNS,
    NARROWED_FROM,
    SecretPattern,
    narrow_patterns,
    redact_message,
    redact_message_with,
    redact_text,
)
from tests.properties.strategies import ODD
from tests.security.redaction_corpus import LEAKS, ORDINARY

HOST_PATTERNS = (
    SecretPattern("employee-id", r"\bEMP-\d{6}\b"),
    SecretPattern("employee-id", r"\bEMP-\d{6}\b", hints=("emp-",)),
    SecretPattern("employee-id", r"EMP-\d{6}\b", literals=("EMP-",)),
    SecretPattern("ticket", r"(?i)\bticket[:=]\s*(\w{4,})", 1, hints=("ticket",)),
    SecretPattern("badge", r"BADGE(\d{4})", 1, hints=("badge",), literals=("BADGE",)),
    # Kinds whose placeholders a later pattern finds a secret in: `[redacted npm_… copy]`
    # holds an npm token, `[redacted EMP-123456]` an employee id.
    SecretPattern("npm_" + "a1" * 18 + " copy", r"\bCOPY-\d{4}\b", literals=("COPY-",)),
    SecretPattern("EMP-123456", r"\bROOM-\d{3}\b"),
)

PIECES = (
    "password",
    "Bearer ",
    "Authorization",
    "token",
    "api_key",
    "\r\n",
    "\\n",
    '\\"',
    '"',
    "=",
    ": ",
    " ",
    "AKIA",
    "do",
    "SK",
    "npm_",
    "[redacted secret]",
    "[redacted ",
    "]",
    "ΑΣ",
    "İ",
    "ſecret",
    "KEY",
    "https://user:",
    "@db/prod",
    "-u admin:",
    "hunter2hunter2",
)

# What the host patterns find: drawn as often as the rest together.
HOST_PIECES = ("EMP-123456", "COPY-1234", "ROOM-101", "BADGE1234", "ticket: abcd1234")

SECRETS = tuple(leak.text for leak in LEAKS) + tuple(leak.secret for leak in LEAKS)

strings = st.lists(
    st.one_of(
        st.sampled_from(HOST_PIECES),
        st.sampled_from(PIECES),
        st.sampled_from(SECRETS),
        st.sampled_from(ORDINARY),
        st.sampled_from(ODD),
        st.text(max_size=20),
    ),
    max_size=4,
).map("".join)

keys = st.one_of(
    st.sampled_from(
        ("password", "api_key", "token", "name", "key", "value", "Authorization", "sig", "auth")
    ),
    st.sampled_from(("pass", "DB_PASSWORD", "x", "", "cookie", "ticket", "EMP", "-u")),
    st.text(max_size=10),
)

pairs = st.builds(
    lambda key, name, value: {key: name, "value": value},
    st.sampled_from(("name", "key")),
    keys,
    strings,
)

json_values: st.SearchStrategy[JSON] = st.recursive(
    st.one_of(strings, st.integers(), st.none(), st.booleans()),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=4),
        pairs,
    ),
    max_leaves=24,
)

tool_inputs = st.dictionaries(keys, json_values, max_size=5)


@st.composite
def blocks(draw: st.DrawFn) -> Block:
    kind = draw(st.sampled_from(("text", "thinking", "tool_use", "result", "parts", "wire")))
    extra = draw(st.one_of(st.just(""), tool_inputs.map(json.dumps)))
    if kind == "text":
        cited = draw(st.one_of(st.none(), st.lists(tool_inputs, max_size=2).map(tuple)))
        return TextBlock(draw(strings), cited, extra=extra)
    if kind == "thinking":
        return ThinkingBlock(draw(strings), "sig==", extra=extra)
    if kind == "tool_use":
        return ToolUseBlock("toolu_01", draw(keys), draw(tool_inputs), extra=extra)
    if kind == "result":
        return ToolResultBlock("toolu_01", draw(strings), extra=extra)
    if kind == "parts":
        parts = tuple(TextBlock(t) for t in draw(st.lists(strings, min_size=1, max_size=3)))
        return ToolResultBlock("toolu_01", parts, extra=extra)
    return WireBlock.of({"type": "document", "source": draw(tool_inputs)})


messages = st.builds(
    lambda role, content: Message(role, tuple(content)),
    st.sampled_from((Role.USER, Role.ASSISTANT)),
    st.lists(blocks(), min_size=1, max_size=4),
)

pattern_lists = st.builds(
    lambda host, first: (*host, *DEFAULT_PATTERNS) if first else (*DEFAULT_PATTERNS, *host),
    st.lists(st.sampled_from(HOST_PATTERNS), max_size=4, unique=True),
    st.booleans(),
)


def each_string(message: Message, patterns: tuple[SecretPattern, ...]) -> Message:
    return redact_message(message, lambda text: redact_text(text, patterns))


def wire(message: Message) -> str:
    return json.dumps(message.to_wire(), ensure_ascii=False)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(messages, pattern_lists)
def test_a_message_redacts_narrowed_as_it_does_string_by_string(
    message: Message, patterns: tuple[SecretPattern, ...]
) -> None:
    expected = each_string(message, patterns)
    narrowed = redact_message_with(message, patterns)
    assert wire(narrowed) == wire(expected)
    assert narrowed == expected
    assert (narrowed is message) == (expected is message)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(strings, min_size=1, max_size=12), pattern_lists)
def test_each_string_redacts_with_the_narrowed_patterns_as_with_all(
    texts: list[str], patterns: tuple[SecretPattern, ...]
) -> None:
    # Narrowed however few the strings: the message path narrows only from `NARROWED_FROM`.
    narrowed = narrow_patterns(patterns, texts)
    for text in texts:
        assert redact_text(text, narrowed) == redact_text(text, patterns)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(messages, st.lists(st.sampled_from(HOST_PATTERNS), max_size=3, unique=True))
def test_a_default_redactor_redacts_a_message_as_its_redact_does(
    message: Message, extra: list[SecretPattern]
) -> None:
    redactor = DefaultRedactor(extra)
    expected = redact_message(message, redactor.redact)
    assert wire(redact_each(redactor, message)) == wire(expected)
    assert redact_messages(redactor, [message, message]) == (expected, expected)


def test_a_tool_input_of_every_corpus_secret_redacts_as_string_by_string() -> None:
    values = {f"k{i}": text for i, text in enumerate(SECRETS + tuple(ORDINARY))}
    pairs = [{"name": "Authorization", "value": f"Bearer {leak.secret}"} for leak in LEAKS]
    message = Message.assistant(ToolUseBlock("toolu_01", "run", {**values, "headers": pairs}))
    for patterns in (DEFAULT_PATTERNS, (*HOST_PATTERNS, *DEFAULT_PATTERNS)):
        expected = each_string(message, patterns)
        assert expected != message
        assert wire(redact_message_with(message, patterns)) == wire(expected)


def test_a_literal_only_a_placeholder_holds_keeps_its_pattern() -> None:
    # `COPY-1234` is redacted first, and its placeholder holds an npm token and an employee
    # id that no string of the message holds.
    patterns = (HOST_PATTERNS[5], HOST_PATTERNS[6], *DEFAULT_PATTERNS, HOST_PATTERNS[2])
    message = Message.user(*(f"room ROOM-101, copy COPY-1234 of {i}" for i in range(8)))
    expected = each_string(message, patterns)
    assert "[redacted [redacted api-token] copy]" in expected.text
    assert "[redacted [redacted employee-id]]" in expected.text
    assert redact_message_with(message, patterns) == expected


def test_the_literals_narrowing_relies_on_are_in_every_match() -> None:
    # Every default match holds a literal of its pattern, case and all (the corpus's
    # secrets found by a pattern that declares some).
    for leak in LEAKS:
        for pattern in DEFAULT_PATTERNS:
            for match in pattern.compiled.finditer(leak.text):
                if pattern.literals:
                    assert any(lit in match.group(0) for lit in pattern.literals), leak.name


def test_a_message_of_few_strings_is_redacted_without_narrowing() -> None:
    message = Message.user("DB_PASSWORD=hunter2hunter2")
    assert NARROWED_FROM > 1
    assert redact_message_with(message, DEFAULT_PATTERNS).text == "DB_PASSWORD=[redacted password]"


class OnlyRedact:
    """A host's redactor: `redact(text)` alone."""

    def redact(self, text: str) -> str:
        return text.replace("hunter2", "[redacted mine]")


def test_a_hosts_own_redactor_is_applied_to_each_string() -> None:
    message = Message.assistant(ToolUseBlock("toolu_01", "run", {"a": "hunter2", "b": ["hunter2"]}))
    redacted = redact_each(OnlyRedact(), message)
    assert redacted.tool_uses[0].input == {"a": "[redacted mine]", "b": ["[redacted mine]"]}


class Subclassed(DefaultRedactor):
    def redact(self, text: str) -> str:
        return super().redact(text).upper()


def test_a_subclass_that_redacts_otherwise_keeps_its_own_redact() -> None:
    message = Message.assistant(ToolUseBlock("toolu_01", "run", {f"k{i}": "x" for i in range(9)}))
    redacted = redact_each(Subclassed(), message)
    assert redacted.tool_uses[0].input == {f"k{i}": "X" for i in range(9)}
