"""The request oracle: valid bodies pass untouched, and each broken rule is reported by its id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.anthropic_rules import RULES, Violation, assert_valid_request, violations
from tests.support.thinking_binding import sign_reply

TRANSCRIPTS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "transcripts"

Block = dict[str, Any]
Message = dict[str, Any]

TOOLS = [
    {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
    {"name": "search", "input_schema": {"type": "object"}},
]
THINKING_ON = {"type": "enabled", "budget_tokens": 1024}
WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search"}
SERVER_USE = {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {}}
SERVER_RESULT = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": []}
PNG = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}


def text(value: str, **extra: Any) -> Block:
    """A text block."""
    return {"type": "text", "text": value, **extra}


def image(**extra: Any) -> Block:
    """A small inline PNG image block."""
    return {"type": "image", "source": PNG, **extra}


def tool_use(tool_id: str, name: str = "get_weather", **extra: Any) -> Block:
    """A tool_use block for one of the test tools."""
    return {"type": "tool_use", "id": tool_id, "name": name, "input": {"city": "Oslo"}, **extra}


def tool_result(tool_id: str, content: Any = "4°C, light rain", **extra: Any) -> Block:
    """A tool_result block answering `tool_id`."""
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content, **extra}


def thinking(words: str = "The user wants the weather.", **extra: Any) -> Block:
    """A signed thinking block, as the model returns it."""
    return {"type": "thinking", "thinking": words, "signature": "EqQBCkgIARABGAIiQ==", **extra}


def redacted(**extra: Any) -> Block:
    """A redacted_thinking block, as the model returns it."""
    return {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a", **extra}


def user(*content: Block | str) -> Message:
    """A user message; a single string stays string content."""
    return message("user", content)


def assistant(*content: Block | str) -> Message:
    """An assistant message; a single string stays string content."""
    return message("assistant", content)


def message(role: str, content: tuple[Block | str, ...]) -> Message:
    """A message whose plain strings become text blocks."""
    if len(content) == 1 and isinstance(content[0], str):
        return {"role": role, "content": content[0]}
    return {"role": role, "content": [text(c) if isinstance(c, str) else c for c in content]}


def body(*messages: Message, **extra: Any) -> dict[str, Any]:
    """A request with the two test tools defined; `extra` overrides or adds top-level keys."""
    request: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "messages": list(messages) or [user("Hello")],
        "tools": TOOLS,
    }
    request.update(extra)
    return request


def without(request: dict[str, Any], key: str) -> dict[str, Any]:
    """A copy of `request` without the top-level `key`."""
    return {k: v for k, v in request.items() if k != key}


def rule_ids(request: dict[str, Any]) -> set[str]:
    """The ids of the rules `request` breaks."""
    return {violation.rule for violation in violations(request)}


WEATHER_LOOP = (
    user("What's the weather in Oslo?"),
    assistant("Let me check.", tool_use("toolu_01")),
    user(tool_result("toolu_01")),
)

VALID = [
    pytest.param(body(user("Hello")), id="one-user-message"),
    pytest.param(body(user(text("Hello"))), id="one-user-block"),
    pytest.param(without(body(user("Hello")), "tools"), id="no-tools"),
    pytest.param(body(user("Hi"), assistant("Hello!"), user("Bye")), id="alternating"),
    pytest.param(body(user("Hi"), system="You are terse."), id="system-string"),
    pytest.param(body(user("Hi"), system=[text("You are terse.")]), id="system-blocks"),
    pytest.param(
        body(
            *WEATHER_LOOP,
            {"role": "system", "content": "Answer in French."},
            model="claude-opus-4-8",
        ),
        id="system-message-after-tool-results",
    ),
    pytest.param(
        body(
            user("Hi"),
            {"role": "system", "content": [text("Be terse.")]},
            assistant("Hello."),
            user("Bye"),
            model="claude-opus-5",
        ),
        id="system-message-before-assistant",
    ),
    pytest.param(
        body(
            {
                "role": "assistant",
                "content": [{"type": "compaction", "content": "Summary.", "signature": "s"}],
            },
            user("Go on."),
        ),
        id="compaction-block-first",
    ),
    pytest.param(body(*WEATHER_LOOP), id="active-tool-loop"),
    pytest.param(
        body(*WEATHER_LOOP, assistant("4°C and raining."), user("Thanks")), id="closed-tool-loop"
    ),
    pytest.param(
        body(
            user("Weather in Oslo and Rome?"),
            assistant(tool_use("toolu_a"), tool_use("toolu_b")),
            user(tool_result("toolu_b"), tool_result("toolu_a"), "Both, please."),
        ),
        id="parallel-results-in-one-message-any-order",
    ),
    pytest.param(
        body(
            user("Show me"),
            assistant(tool_use("toolu_01", name="search")),
            user(
                tool_result("toolu_01", [text("a chart"), image()], is_error=False),
                image(),
                "What do you see?",
            ),
        ),
        id="tool-result-with-blocks-then-image-and-text",
    ),
    pytest.param(
        body(
            user("Run it"),
            assistant(tool_use("toolu_01", name="search")),
            user(tool_result("toolu_01", "", is_error=True)),
        ),
        id="empty-string-tool-result",
    ),
    pytest.param(
        body(
            user("Go"),
            assistant(tool_use("toolu_01", name="search")),
            user(tool_result("toolu_01", [])),
        ),
        id="empty-list-tool-result",
    ),
    pytest.param(body(user("Name a colour."), assistant("The colour is")), id="prefill"),
    pytest.param(
        body(user("Name a colour."), assistant(text("The colour is"))), id="prefill-block"
    ),
    pytest.param(
        body(user("Name a colour."), {"role": "assistant", "content": []}),
        id="final-assistant-empty",
    ),
    pytest.param(
        body(user("Name a colour."), {"role": "assistant", "content": ""}),
        id="final-assistant-empty-string",
    ),
    pytest.param(
        body(
            user("naïve café — 日本語テキスト, עברית, العربية, e\u0301, 🧑\u200d💻🏳️\u200d🌈"),
            assistant("Ｆｕｌｌｗｉｄｔｈ ＯＫ \U0001d54f\u00a0zero\u200bwidth"),
            user("\u202eright-to-left override\u202c and a tab\tinside"),
        ),
        id="odd-unicode",
    ),
    pytest.param(
        body(
            user("What's the weather in Oslo?"),
            assistant(thinking(), tool_use("toolu_01")),
            user(tool_result("toolu_01")),
            thinking=THINKING_ON,
        ),
        id="thinking-led-tool-loop",
    ),
    pytest.param(
        body(
            user("What's the weather in Oslo?"),
            assistant(redacted(), thinking(), "Checking.", tool_use("toolu_01")),
            user(tool_result("toolu_01")),
            thinking=THINKING_ON,
        ),
        id="redacted-thinking-led-tool-loop",
    ),
    pytest.param(
        body(
            user("Weather in Oslo, then search for umbrellas."),
            assistant(thinking(), tool_use("toolu_01")),
            user(tool_result("toolu_01")),
            assistant(tool_use("toolu_02", name="search")),
            user(tool_result("toolu_02")),
            thinking=THINKING_ON,
        ),
        id="multi-step-tool-loop-thinks-once",
    ),
    pytest.param(
        body(
            user("Weather in Oslo, then search for umbrellas."),
            assistant(thinking(), tool_use("toolu_01")),
            user(tool_result("toolu_01")),
            assistant(thinking("Now umbrellas."), tool_use("toolu_02", name="search")),
            user(tool_result("toolu_02")),
            thinking=THINKING_ON,
        ),
        id="interleaved-thinking-tool-loop",
    ),
    pytest.param(
        body(
            *WEATHER_LOOP,
            assistant("4°C and raining."),
            user("Thanks"),
            thinking=THINKING_ON,
        ),
        id="thinking-on-after-a-finished-loop-without-thinking",
    ),
    pytest.param(
        body(
            user("Hi"),
            thinking=THINKING_ON,
            tool_choice={"type": "none"},
            top_p=0.95,
        ),
        id="thinking-with-compatible-sampling",
    ),
    pytest.param(
        body(
            user("Hi"),
            thinking={"type": "adaptive"},
            tool_choice={"type": "any"},
            model="claude-sonnet-4-6",
        ),
        id="adaptive-thinking",
    ),
    pytest.param(
        body(*WEATHER_LOOP, thinking={"type": "adaptive"}, model="claude-sonnet-4-6"),
        id="adaptive-thinking-loop-need-not-open-with-thinking",
    ),
    pytest.param(
        body(
            user("Weather in Oslo and Bergen?"),
            assistant(
                thinking(""),
                tool_use("toolu_01"),
                thinking("Now Bergen."),
                tool_use("toolu_02"),
            ),
            user(tool_result("toolu_01"), tool_result("toolu_02")),
            model="claude-fable-5-1",
        ),
        id="progress-update-before-the-second-call",
    ),
    pytest.param(
        body(
            user("Weather in Oslo?"),
            assistant(thinking(), tool_use("toolu_01"), "Checking", thinking("Cut short.")),
            user(tool_result("toolu_01")),
            model="claude-opus-5-5",
        ),
        id="earlier-reply-ending-in-a-cut-progress-update",
    ),
    pytest.param(
        body(
            user("Find the article and run uname."),
            assistant("Both at once.", SERVER_USE, tool_use("toolu_01")),
            user(tool_result("toolu_01")),
            assistant(SERVER_RESULT, "The article says..."),
            user("Thanks"),
            tools=[*TOOLS, WEB_SEARCH],
        ),
        id="server-call-beside-client-calls-answered-in-the-next-reply",
    ),
    pytest.param(
        body(
            user("Find the article and run uname."),
            assistant("Both at once.", SERVER_USE, tool_use("toolu_01")),
            user(tool_result("toolu_01")),
            tools=[*TOOLS, WEB_SEARCH],
        ),
        id="server-call-beside-client-calls-waiting-for-their-results",
    ),
    pytest.param(
        body(user("Search the news."), assistant(SERVER_USE), tools=[*TOOLS, WEB_SEARCH]),
        id="paused-turn-sent-back-as-it-is",
    ),
    pytest.param(
        body(
            user("Search the news."),
            assistant(SERVER_USE),
            assistant(SERVER_RESULT, "Here is the news."),
            user("Thanks"),
            tools=[*TOOLS, WEB_SEARCH],
        ),
        id="paused-turn-and-its-continuation",
    ),
    pytest.param(
        body(
            user("Search the news."),
            assistant(SERVER_USE, SERVER_RESULT),
            {"role": "system", "content": "Prefer primary sources."},
            tools=[*TOOLS, WEB_SEARCH],
            model="claude-opus-5-5",
        ),
        id="system-message-after-a-paused-turn",
    ),
    pytest.param(
        body(user("Hi"), thinking={"type": "disabled"}, temperature=0.2, top_k=5),
        id="thinking-disabled-allows-sampling",
    ),
    pytest.param(
        body(user("Hi"), tool_choice={"type": "tool", "name": "search"}),
        id="forced-tool-choice",
    ),
    pytest.param(
        body(
            user(
                text("What does the page say?"),
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": ""},
                    "title": "empty page",
                    "citations": {"enabled": True},
                },
            )
        ),
        id="empty-text-document-as-a-web-fetch-of-an-empty-page-returns-it",
    ),
    pytest.param(
        body(
            user(text("Context", cache_control={"type": "ephemeral", "ttl": "1h"})),
            assistant("Noted."),
            user(text("Question", cache_control={"type": "ephemeral"})),
            tools=[{**TOOLS[0], "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
            system=[text("Rules", cache_control={"type": "ephemeral", "ttl": "1h"})],
        ),
        id="four-breakpoints-long-ttl-first",
    ),
    pytest.param(
        body(
            user("Go"),
            assistant(tool_use("toolu_01", name="search")),
            user(tool_result("toolu_01", [text("out", cache_control={"type": "ephemeral"})])),
            cache_control={"type": "ephemeral"},
        ),
        id="nested-and-top-level-breakpoints",
    ),
]


@pytest.mark.parametrize("request_body", VALID)
def test_a_valid_request_has_no_violations(request_body: dict[str, Any]) -> None:
    assert violations(request_body) == []
    assert_valid_request(request_body)


def prefix_changed() -> dict[str, Any]:
    """A model that binds thinking, sent a thinking block whose prefix (the first user
    message) was edited after the block was produced."""
    model = "claude-fable-5-1"
    produced = body(user("Fix the export"), model=model)
    reply = sign_reply(produced, [thinking(), {"type": "text", "text": "Done."}])
    return body(user("Fix the import"), assistant(*reply), user("Thanks"), model=model)


def invalid(
    rule: str, request_body: dict[str, Any], *, also: tuple[str, ...] = (), name: str = ""
) -> Any:
    """A test case: `request_body` breaks `rule` and at most the rules in `also`."""
    return pytest.param(rule, request_body, frozenset(also), id=f"{rule}:{name}" if name else rule)


def alternating(count: int) -> list[Message]:
    """`count` short messages, alternating user and assistant."""
    return [user("q") if i % 2 == 0 else assistant("a") for i in range(count)]


INVALID = [
    # the body
    invalid("model-invalid", body(model="")),
    invalid("model-invalid", without(body(), "model"), name="missing"),
    invalid("max-tokens-invalid", body(max_tokens=0)),
    invalid("max-tokens-invalid", body(max_tokens=True), name="bool"),
    invalid("max-tokens-invalid", body(max_tokens="1024"), name="string"),
    invalid("messages-invalid", body(messages=[])),
    invalid("messages-invalid", without(body(), "messages"), name="missing"),
    invalid("messages-too-many", body(messages=alternating(100_001))),
    invalid("system-invalid", body(system=[text("")])),
    invalid("system-invalid", body(system=[image()]), name="image-block"),
    invalid("system-invalid", body(system={"text": "Rules"}), name="object"),
    invalid("message-invalid", body(messages=[user("Hi"), "Hello"])),
    invalid("message-invalid", body(messages=[{"role": "user"}]), name="no-content"),
    invalid("message-invalid", body(messages=[{"role": "user", "content": 7}]), name="int"),
    invalid("role-system", body(user("Hi"), {"role": "system", "content": "Be terse."})),
    invalid(
        "role-system",
        body(user("Hi"), {"role": "system", "content": "Be terse."}, model="claude-sonnet-5"),
        name="sonnet-5",
    ),
    invalid(
        "system-message-misplaced",
        body(
            user("Search the news."),
            assistant(SERVER_USE, SERVER_RESULT),
            {
                "role": "system",
                "content": [
                    {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "search"}}
                ],
            },
            tools=[*TOOLS, WEB_SEARCH],
            model="claude-opus-5-5",
        ),
        name="tool-change-after-a-paused-turn",
    ),
    invalid(
        "system-message-misplaced",
        body({"role": "system", "content": "Be terse."}, user("Hi"), model="claude-opus-4-8"),
    ),
    invalid(
        "system-message-misplaced",
        body(
            user("Hi"),
            assistant("Hello"),
            {"role": "system", "content": "Be terse."},
            model="claude-opus-4-8",
        ),
        name="after-assistant",
    ),
    invalid(
        "system-message-misplaced",
        body(
            user("Hi"),
            {"role": "system", "content": "Be terse."},
            user("Bye"),
            model="claude-opus-5",
        ),
        also=("roles-not-alternating",),
        name="before-user",
    ),
    invalid(
        "compaction-misplaced",
        body(
            user("Hi"),
            {
                "role": "assistant",
                "content": [{"type": "compaction", "content": "S", "signature": "x"}],
            },
        ),
    ),
    invalid(
        "compaction-invalid",
        body(
            {"role": "assistant", "content": [{"type": "compaction", "content": "Summary."}]},
            user("Go on."),
        ),
    ),
    invalid(
        "system-message-invalid",
        body(user("Hi"), {"role": "system", "content": [image()]}, model="claude-opus-5"),
    ),
    invalid("role-unknown", body(user("Hi"), {"role": "tool", "content": "42"})),
    # roles
    invalid("first-message-user", body(assistant("Hello"), user("Hi"))),
    invalid("roles-not-alternating", body(user("Hi"), user("Anyone?"))),
    invalid(
        "roles-not-alternating",
        body(user("Hi"), assistant("Hello"), assistant("Still here")),
        name="assistants",
    ),
    invalid("content-empty", body(user(""), assistant("a"), user("b"))),
    invalid("content-empty", body(user(" \n\t"), assistant("a"), user("b")), name="blank"),
    invalid(
        "content-empty",
        body(user("Hi"), {"role": "assistant", "content": []}, user("b")),
        name="empty-list-mid-assistant",
    ),
    invalid(
        "content-empty",
        body(user("Hi"), assistant("a"), {"role": "user", "content": []}),
        name="final-user",
    ),
    invalid("prefill-trailing-whitespace", body(user("Hi"), assistant("The answer is "))),
    invalid(
        "prefill-trailing-whitespace",
        body(user("Hi"), assistant(text("Sure."), text("The answer:\n"))),
        name="block",
    ),
    # blocks
    invalid("block-invalid", body(user("Hi"), assistant("a"), {"role": "user", "content": ["b"]})),
    invalid("block-invalid", body(user({"type": "text", "text": 5})), name="text-not-str"),
    invalid("body-invalid", body(user("Hi"), thinking={"type": {}}), name="thinking-type-object"),
    invalid(
        "block-invalid",
        body(user("Hi"), system=[{"type": {}, "text": "Rules", "cache_control": {"type": "x"}}]),
        name="type-not-str-system",
    ),
    invalid(
        "block-invalid",
        body(user(tool_result("t1", [{"type": ["text"], "text": "4°C"}]))),
        name="type-not-str-in-result",
    ),
    invalid("block-type-unknown", body(user({"type": "video", "url": "https://x/y.mp4"}))),
    # documents, search results, server tools
    invalid(
        "block-misplaced",
        body(user("Hi"), assistant({"type": "container_upload", "file_id": "file_1"})),
    ),
    invalid(
        "document-invalid",
        body(user({"type": "document", "source": {"type": "base64", "data": "JVBER"}})),
    ),
    invalid(
        "document-invalid",
        body(user({"type": "document", "source": {"type": "text", "media_type": "text/plain"}})),
        name="text-without-data",
    ),
    invalid(
        "search-result-invalid",
        body(user({"type": "search_result", "source": "s", "title": "t", "content": []})),
    ),
    invalid(
        "server-tool-use-invalid",
        body(
            user("Hi"),
            assistant(
                {"type": "server_tool_use", "id": "srv 1", "name": "web_search", "input": {}},
                {"type": "web_search_tool_result", "tool_use_id": "srv 1", "content": []},
            ),
        ),
    ),
    invalid(
        "server-tool-result-orphan",
        body(
            user("Hi"),
            assistant(
                {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_9", "content": {}}
            ),
        ),
    ),
    invalid(
        "server-tool-use-unanswered",
        body(
            user("Hi"),
            assistant(
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                text("Searching."),
            ),
            user("And?"),
        ),
    ),
    invalid(
        "server-tool-use-unanswered",
        body(
            user("Find the article and run uname."),
            assistant(SERVER_USE, tool_use("toolu_01")),
            user(tool_result("toolu_01")),
            assistant("No article."),
            user("Thanks"),
        ),
        name="not-in-the-next-reply",
    ),
    invalid(
        "server-tool-turn-ended",
        body(
            user("Find the article and run uname."),
            assistant(SERVER_USE, tool_use("toolu_01")),
            user(tool_result("toolu_01"), "Here is the output."),
        ),
    ),
    invalid("block-type-unknown", body(user({"text": "no type"})), name="untyped"),
    invalid("text-empty", body(user(text(""), text("Hi")))),
    invalid("text-empty", body(user(text("Hi"), text(" \n "))), name="whitespace"),
    invalid(
        "text-empty",
        body(
            user("Hi"), assistant(text("  "), tool_use("toolu_01")), user(tool_result("toolu_01"))
        ),
        name="assistant",
    ),
    invalid(
        "image-invalid",
        body(user({"type": "image", "source": {**PNG, "media_type": "image/bmp"}})),
    ),
    invalid("image-invalid", body(user({"type": "image"})), name="no-source"),
    invalid("tool-use-not-assistant", body(user("Call it", tool_use("toolu_01")))),
    invalid("tool-result-not-user", body(user("Hi"), assistant("Here:", tool_result("toolu_01")))),
    invalid("thinking-not-assistant", body(user(thinking(), "Hi"))),
    invalid("thinking-not-assistant", body(user("Hi", redacted())), name="redacted"),
    invalid(
        "thinking-invalid",
        body(user("Hi"), assistant(thinking(signature="")), user("b")),
        also=("thinking-last-block",),
    ),
    invalid(
        "thinking-invalid",
        body(user("Hi"), assistant({"type": "thinking", "thinking": "hm"}, "a"), user("b")),
        name="no-signature",
    ),
    invalid(
        "thinking-invalid",
        body(user("Hi"), assistant({"type": "thinking", "signature": "s"}, "a"), user("b")),
        name="no-thinking",
    ),
    invalid(
        "redacted-thinking-invalid",
        body(user("Hi"), assistant({"type": "redacted_thinking"}, "a"), user("b")),
    ),
    invalid("thinking-order", body(user("Hi"), assistant("First", thinking(), "Then"), user("b"))),
    invalid(
        "thinking-order",
        body(
            user("Hi"),
            assistant(thinking(), tool_use("toolu_01"), redacted(), "x"),
            user(tool_result("toolu_01")),
        ),
        name="after-tool-use",
    ),
    invalid(
        "thinking-order",
        body(user("Hi"), assistant("First", thinking(), "Then", tool_use("toolu_01")), user("b")),
        also=("tool-use-unanswered",),
        name="between-texts",
    ),
    invalid("thinking-last-block", body(user("Hi"), assistant("a", thinking()))),
    invalid("thinking-last-block", body(user("Hi"), assistant(redacted())), name="prefill"),
    invalid("thinking-prefix-changed", prefix_changed()),
    # tool use
    invalid(
        "tool-use-id-invalid",
        body(user("Hi"), assistant(tool_use("call 1")), user(tool_result("call 1"))),
    ),
    invalid(
        "tool-use-id-invalid",
        body(user("Hi"), assistant(tool_use("")), user(tool_result(""))),
        name="empty",
    ),
    invalid(
        "tool-use-name-invalid",
        body(
            user("Hi"),
            assistant(tool_use("toolu_01", "get weather")),
            user(tool_result("toolu_01")),
        ),
    ),
    invalid(
        "tool-use-input-invalid",
        body(
            user("Hi"),
            assistant({**tool_use("toolu_01"), "input": '{"city": "Oslo"}'}),
            user(tool_result("toolu_01")),
        ),
    ),
    invalid(
        "tool-use-id-duplicate",
        body(*WEATHER_LOOP, assistant(tool_use("toolu_01")), user(tool_result("toolu_01"))),
        also=("tool-result-duplicate",),
    ),
    invalid("tool-use-unanswered", body(user("Hi"), assistant("Checking.", tool_use("toolu_01")))),
    invalid(
        "tool-use-unanswered",
        body(user("Hi"), assistant(tool_use("toolu_01")), user("Never mind")),
        name="next-user-has-no-result",
    ),
    invalid(
        "tool-use-unanswered",
        body(
            user("Weather in Oslo and Rome?"),
            assistant(tool_use("toolu_a"), tool_use("toolu_b")),
            user(tool_result("toolu_a")),
            user(tool_result("toolu_b")),
        ),
        also=("roles-not-alternating", "tool-result-orphan"),
        name="parallel-results-split",
    ),
    invalid(
        "tool-use-unanswered",
        body(
            user("Weather in Oslo and Rome?"),
            assistant(tool_use("toolu_a"), tool_use("toolu_b")),
            user(tool_result("toolu_a")),
        ),
        name="parallel-result-missing",
    ),
    invalid(
        "tool-result-orphan",
        body(user(tool_result("toolu_01"), "Continue."), assistant("OK"), user("And?")),
        name="cut-before-its-tool-use",
    ),
    invalid(
        "tool-result-orphan",
        body(*WEATHER_LOOP, assistant("Done."), user(tool_result("toolu_01"))),
        also=("tool-result-duplicate",),
        name="result-two-messages-late",
    ),
    invalid(
        "tool-result-orphan",
        body(
            user("Hi"),
            assistant(tool_use("toolu_01")),
            user(tool_result("toolu_01"), tool_result("toolu_99")),
        ),
        name="unknown-id",
    ),
    invalid(
        "tool-result-not-first",
        body(
            user("Hi"),
            assistant(tool_use("toolu_01")),
            user("Here it is:", tool_result("toolu_01")),
        ),
    ),
    invalid(
        "tool-result-duplicate",
        body(
            user("Hi"),
            assistant(tool_use("toolu_01")),
            user(tool_result("toolu_01"), tool_result("toolu_01")),
        ),
    ),
    invalid(
        "tool-result-invalid",
        body(
            user("Hi"),
            assistant(tool_use("toolu_01")),
            user(tool_result("toolu_01", is_error="yes")),
        ),
    ),
    invalid(
        "tool-result-content-invalid",
        body(
            user("Hi"), assistant(tool_use("toolu_01")), user(tool_result("toolu_01", [text("")]))
        ),
    ),
    invalid(
        "tool-result-content-invalid",
        body(
            user("Hi"), assistant(tool_use("toolu_01")), user(tool_result("toolu_01", {"ok": True}))
        ),
        name="object",
    ),
    invalid(
        "tool-result-content-invalid",
        body(
            user("Hi"),
            assistant(tool_use("toolu_01")),
            user(tool_result("toolu_01", [tool_use("toolu_02")])),
        ),
        name="nested-tool-use",
    ),
    invalid("tools-missing", without(body(*WEATHER_LOOP), "tools")),
    invalid(
        "tools-missing", body(*WEATHER_LOOP, tools=[]), also=("tool-use-undefined",), name="empty"
    ),
    invalid("tools-invalid", body(tools={"get_weather": {}})),
    invalid("tools-invalid", body(tools=[TOOLS[0], "search"]), name="string-entry"),
    invalid(
        "tool-name-invalid", body(tools=[{"name": "x" * 65, "input_schema": {"type": "object"}}])
    ),
    invalid(
        "tool-name-invalid", body(tools=[{"input_schema": {"type": "object"}}]), name="missing"
    ),
    invalid(
        "tool-schema-invalid", body(tools=[{"name": "search", "input_schema": {"type": "string"}}])
    ),
    invalid("tool-schema-invalid", body(tools=[{"name": "search"}]), name="missing"),
    invalid("tool-name-duplicate", body(tools=[*TOOLS, TOOLS[1]])),
    invalid(
        "tool-use-undefined",
        body(
            user("Hi"), assistant(tool_use("toolu_01", "read_file")), user(tool_result("toolu_01"))
        ),
    ),
    invalid("tool-choice-invalid", body(tool_choice={"type": "required"})),
    invalid(
        "tool-choice-invalid", body(tool_choice={"type": "tool", "name": "nope"}), name="undefined"
    ),
    # thinking
    invalid("thinking-config-invalid", body(thinking={"type": "on", "budget_tokens": 2048})),
    invalid("thinking-budget-invalid", body(thinking={"type": "enabled", "budget_tokens": 1023})),
    invalid(
        "thinking-budget-invalid",
        body(thinking={"type": "enabled", "budget_tokens": 4096}),
        name="not-below-max-tokens",
    ),
    invalid("thinking-budget-invalid", body(thinking={"type": "enabled"}), name="missing"),
    invalid("thinking-tool-choice", body(thinking=THINKING_ON, tool_choice={"type": "any"})),
    invalid(
        "thinking-tool-choice",
        body(thinking=THINKING_ON, tool_choice={"type": "tool", "name": "search"}),
        name="forced-tool",
    ),
    invalid("thinking-temperature", body(thinking=THINKING_ON, temperature=1.0)),
    invalid("thinking-top-k", body(thinking=THINKING_ON, top_k=40)),
    invalid("thinking-top-p", body(thinking=THINKING_ON, top_p=0.9)),
    invalid(
        "thinking-tool-loop",
        body(*WEATHER_LOOP, thinking=THINKING_ON),
        name="tool-loop-without-thinking",
    ),
    invalid(
        "thinking-tool-loop",
        body(
            user("What's the weather in Oslo?"),
            assistant("[earlier reasoning, summarised] wants weather", tool_use("toolu_01")),
            user(tool_result("toolu_01")),
            thinking=THINKING_ON,
        ),
        name="thinking-downgraded-to-text",
    ),
    invalid(
        "thinking-tool-loop",
        body(
            user("Weather in Oslo, then search for umbrellas."),
            assistant(tool_use("toolu_01")),
            user(tool_result("toolu_01")),
            assistant(thinking(), tool_use("toolu_02", name="search")),
            user(tool_result("toolu_02")),
            thinking=THINKING_ON,
        ),
        name="loop-opening-lost-its-thinking",
    ),
    invalid(
        "prefill-with-thinking",
        body(user("Name a colour."), assistant("The colour is"), thinking=THINKING_ON),
    ),
    invalid(
        "prefill-with-thinking",
        body(user("Name a colour."), assistant("The colour is"), model="claude-fable-5-1"),
        name="thinking-on-by-default",
    ),
    invalid(
        "tool-choice-unsupported",
        body(user("Hi"), tool_choice={"type": "any"}, model="claude-opus-5-5"),
    ),
    invalid("sampling-unsupported", body(user("Hi"), temperature=0.2, model="claude-fable-5")),
    invalid(
        "tool-schema-invalid",
        body(user("Hi"), tools=[{"type": "custom", "name": "run"}, WEB_SEARCH]),
        name="custom-tool-without-schema",
    ),
    invalid(
        "thinking-config-invalid",
        body(user("Hi"), thinking={"type": "disabled"}, model="claude-opus-5-5"),
        name="disabled-on-an-always-thinking-model",
    ),
    invalid(
        "thinking-config-invalid",
        body(user("Hi"), thinking=THINKING_ON, model="claude-opus-4-8"),
        name="manual-on-an-adaptive-only-model",
    ),
    # prompt caching
    invalid(
        "cache-control-too-many",
        body(
            user(*[text(f"part {i}", cache_control={"type": "ephemeral"}) for i in range(5)]),
        ),
    ),
    invalid(
        "cache-control-too-many",
        body(
            user(*[text(f"part {i}", cache_control={"type": "ephemeral"}) for i in range(3)]),
            system=[text("Rules", cache_control={"type": "ephemeral"})],
            cache_control={"type": "ephemeral"},
        ),
        name="top-level-takes-a-slot",
    ),
    invalid("cache-control-invalid", body(user(text("Hi", cache_control={"type": "persistent"})))),
    invalid(
        "cache-control-invalid",
        body(user(text("Hi", cache_control={"type": "ephemeral", "ttl": "10m"}))),
        name="ttl",
    ),
    invalid("cache-control-invalid", body(user("Hi"), cache_control=True), name="top-level"),
    invalid(
        "cache-control-ttl-order",
        body(
            user(text("Hi", cache_control={"type": "ephemeral", "ttl": "1h"})),
            system=[text("Rules", cache_control={"type": "ephemeral", "ttl": "5m"})],
        ),
    ),
    invalid(
        "cache-control-ttl-order",
        body(
            user(text("Hi", cache_control={"type": "ephemeral", "ttl": "1h"})),
            tools=[{**TOOLS[0], "cache_control": {"type": "ephemeral"}}],
        ),
        name="default-ttl-is-5m",
    ),
    invalid(
        "cache-control-ttl-order",
        body(
            user(text("Hi", cache_control={"type": "ephemeral"})),
            cache_control={"type": "ephemeral", "ttl": "1h"},
        ),
        name="top-level-comes-last",
    ),
    invalid(
        "cache-control-on-thinking",
        body(
            user("Hi"),
            assistant(thinking(cache_control={"type": "ephemeral"}), "Hello"),
            user("b"),
        ),
    ),
    invalid(
        "cache-control-on-empty-text",
        body(user(text("", cache_control={"type": "ephemeral"}), text("Hi"))),
        also=("text-empty",),
    ),
    invalid(
        "cache-control-on-empty-text",
        body(system=[text(" ", cache_control={"type": "ephemeral"})]),
        also=("system-invalid",),
        name="system",
    ),
]


@pytest.mark.parametrize(("rule", "request_body", "also"), INVALID)
def test_a_broken_rule_is_reported_by_its_id(
    rule: str, request_body: dict[str, Any], also: frozenset[str]
) -> None:
    found = rule_ids(request_body)

    assert rule in found
    assert found <= {rule} | also, f"unexpected extra violations: {found - {rule} - also}"


def test_every_rule_has_a_failing_example() -> None:
    exercised = {param.values[0] for param in INVALID}

    assert exercised == RULES


def test_violations_say_where_the_problem_is() -> None:
    request_body = body(
        user("Hi"),
        assistant("Checking.", tool_use("toolu_01")),
        user(tool_result("toolu_01"), text(" ")),
    )

    found = violations(request_body)

    assert [(v.rule, v.where) for v in found] == [("text-empty", "messages[2].content[1]")]
    assert found[0].detail
    assert isinstance(found[0], Violation)


def test_assert_valid_request_lists_every_violation() -> None:
    request_body = body(assistant(""), assistant("x"), model="", max_tokens=0)

    with pytest.raises(AssertionError) as raised:
        assert_valid_request(request_body)

    message = str(raised.value)
    for rule in ("model-invalid", "max-tokens-invalid", "first-message-user", "content-empty"):
        assert rule in message
    assert "roles-not-alternating" in message


def test_an_orphan_left_by_a_cut_names_the_tool_use_id() -> None:
    history = [*WEATHER_LOOP, assistant("4°C."), user("And Rome?")]
    history += [assistant(tool_use("toolu_02")), user(tool_result("toolu_02")), assistant("Sunny.")]
    history.append(user("Thanks"))
    cut_inside_the_second_loop = history[6:]

    found = violations(body(*cut_inside_the_second_loop))

    assert [v.rule for v in found] == ["tool-result-orphan"]
    assert "toolu_02" in found[0].detail
    assert found[0].where == "messages[0]"


def test_a_split_parallel_call_names_the_unanswered_id() -> None:
    request_body = body(
        user("Weather in Oslo and Rome?"),
        assistant(tool_use("toolu_a"), tool_use("toolu_b")),
        user(tool_result("toolu_a")),
        assistant("Still waiting."),
        user(tool_result("toolu_b")),
    )

    found = violations(request_body)

    unanswered = [v for v in found if v.rule == "tool-use-unanswered"]
    assert len(unanswered) == 1
    assert "toolu_b" in unanswered[0].detail
    assert "toolu_a" not in unanswered[0].detail
    assert any(v.rule == "tool-result-orphan" and v.where == "messages[4]" for v in found)


def test_the_oracle_does_not_mutate_the_body() -> None:
    request_body = body(*WEATHER_LOOP, system=[text("Rules")], thinking=THINKING_ON)
    snapshot = json.dumps(request_body, sort_keys=True)

    violations(request_body)

    assert json.dumps(request_body, sort_keys=True) == snapshot


def transcript_request(path: Path) -> dict[str, Any]:
    """A request as an agent would send it: the transcript, its system prompt, its tools."""
    messages = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    if messages and messages[-1]["role"] == "assistant":
        messages.pop()
    meta = json.loads(path.with_suffix(".meta.json").read_text(encoding="utf-8"))
    tool_names = sorted(
        {
            block["name"]
            for message in messages
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_use"
        }
    )
    request: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "messages": messages,
        "tools": [{"name": name, "input_schema": {"type": "object"}} for name in tool_names],
    }
    if isinstance(meta.get("system"), str):
        request["system"] = meta["system"]
    return request


@pytest.mark.transcripts
def test_real_transcripts_are_valid_requests() -> None:
    paths = sorted(TRANSCRIPTS.glob("*.jsonl")) if TRANSCRIPTS.is_dir() else []
    if not paths:
        pytest.skip(f"no shared transcripts at {TRANSCRIPTS}")

    failures = {
        path.name: [str(v) for v in violations(transcript_request(path))[:5]] for path in paths
    }

    assert {name: found for name, found in failures.items() if found} == {}
