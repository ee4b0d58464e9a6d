"""An independent checker for Anthropic Messages request bodies, used as a test oracle.

`violations(body)` takes the JSON body exactly as it would be POSTed to `/v1/messages` and
returns every rule it breaks; `assert_valid_request(body)` fails a test with all of them.
The rules are those of `docs/anthropic-request-rules.md` in the shared docs, the [strict] ones
included. This module deliberately imports nothing from `domain`, `application` or `adapters`:
it judges the library's output, so it must not share the library's mistakes.

Rule ids are stable (tests match on them); `RULES` lists them all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeGuard

import attrs

from tests.support.thinking_binding import (
    MAPPING,
    PREFIX_MISMATCH,
    binding_failures,
    drop_requested,
    is_bound_model,
)

RULES: frozenset[str] = frozenset(
    {
        # the body
        "body-invalid",
        "model-invalid",
        "max-tokens-invalid",
        "messages-invalid",
        "messages-too-many",
        "system-invalid",
        "message-invalid",
        "role-system",
        "system-message-misplaced",
        "compaction-misplaced",
        "compaction-invalid",
        "system-message-invalid",
        "role-unknown",
        # roles
        "first-message-user",
        "roles-not-alternating",
        "content-empty",
        "prefill-trailing-whitespace",
        "prefill-with-thinking",
        # blocks
        "block-invalid",
        "block-type-unknown",
        "text-empty",
        "image-invalid",
        "tool-use-not-assistant",
        "tool-result-not-user",
        "thinking-not-assistant",
        "thinking-invalid",
        "redacted-thinking-invalid",
        "thinking-order",
        "thinking-last-block",
        "thinking-prefix-changed",
        # tool use
        "tool-use-id-invalid",
        "tool-use-name-invalid",
        "tool-use-input-invalid",
        "tool-use-id-duplicate",
        "tool-use-unanswered",
        "tool-result-orphan",
        "tool-result-not-first",
        "tool-result-duplicate",
        "tool-result-invalid",
        "tool-result-content-invalid",
        "tools-missing",
        "tools-invalid",
        "tool-name-invalid",
        "tool-schema-invalid",
        "tool-name-duplicate",
        "tool-use-undefined",
        "tool-choice-invalid",
        "tool-choice-unsupported",
        "sampling-unsupported",
        # thinking
        "thinking-config-invalid",
        "thinking-budget-invalid",
        "thinking-tool-choice",
        "thinking-temperature",
        "thinking-top-k",
        "thinking-top-p",
        "thinking-tool-loop",
        # prompt caching
        "cache-control-too-many",
        "cache-control-invalid",
        "cache-control-ttl-order",
        "cache-control-on-thinking",
        "cache-control-on-empty-text",
        # documents, search results, server tools
        "block-misplaced",
        "document-invalid",
        "search-result-invalid",
        "server-tool-use-invalid",
        "server-tool-result-orphan",
        "server-tool-use-unanswered",
        "server-tool-turn-ended",
    }
)
"""Every rule id `violations` can report."""

MAX_MESSAGES = 100_000
MAX_CACHE_BREAKPOINTS = 4
MIN_THINKING_BUDGET = 1024
TOOL_USE_ID_PATTERN = re.compile(r"^[a-zA-Z0-9_-]+$")
TOOL_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ROLES = frozenset({"user", "assistant"})
SYSTEM_MESSAGE_MODELS = (
    "claude-opus-4-8",
    "claude-opus-5",
    "claude-fable-5",
    "claude-mythos-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
)
"""Model-name prefixes that take `role: "system"` messages inside `messages`: the page
build-with-claude/mid-conversation-system-messages (as of 2026-11) names Claude Fable 5.1,
Mythos 5.1, Fable 5, Mythos 5, Opus 5.5, Opus 4.8, Opus 5, Sonnet 5.5 and Haiku 5.5 (the last
two added since its 2026-09-26 version), and says "This feature is not available on Claude
Sonnet 5". Any other model refuses the role."""
SYSTEM_MESSAGE_BLOCK_TYPES = frozenset({"text", "tool_addition", "tool_removal"})


def _leads_with_compaction(message: Mapping[str, Any]) -> bool:
    """Whether the message starts with the API's compaction block: the first message may
    then be the assistant's (the block is sent back in the message it came in)."""
    content = message.get("content")
    return (
        isinstance(content, list)
        and bool(content)
        and isinstance(content[0], MAPPING)
        and content[0].get("type") == "compaction"
    )


def takes_system_messages(model: object) -> bool:
    return isinstance(model, str) and model.startswith(SYSTEM_MESSAGE_MODELS)


SERVER_RESULT_TYPES = frozenset(
    {
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "mcp_tool_result",
        # agents-and-tools/tool-use/advisor-tool: the advisor is a server tool, called by a
        # `server_tool_use` named "advisor", its result in the same reply.
        "advisor_tool_result",
    }
)
SERVER_USE_TYPES = frozenset({"server_tool_use", "mcp_tool_use"})
USER_ONLY_TYPES = frozenset({"document", "search_result", "container_upload"})
UNMARKED_TYPES = frozenset({"fallback", "mcp_tool_listing"})
"""Blocks of a reply sent back as they came, whose params take no `cache_control` (the SDK's
`BetaFallbackBlockParam` and `BetaMCPToolListingBlockParam`, anthropic 2.14): a `fallback`
marks where one model's output gives way to the next (build-with-claude/
refusals-and-fallback), an `mcp_tool_listing` is the tool list an MCP toolset fetched."""
BLOCK_TYPES = (
    frozenset({"text", "image", "tool_use", "tool_result", "thinking", "redacted_thinking"})
    | SERVER_RESULT_TYPES
    | SERVER_USE_TYPES
    | USER_ONLY_TYPES
    | UNMARKED_TYPES
)
THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})
TOOL_RESULT_CONTENT_TYPES = frozenset(
    {"text", "image", "document", "search_result", "tool_reference", "browser_state"}
)
IMAGE_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
CACHE_TTLS = frozenset({"5m", "1h"})
# "enabled" is manual extended thinking; "adaptive" lets newer models choose their own budget.
THINKING_CONFIG_TYPES = frozenset({"enabled", "disabled", "adaptive"})
TOOL_CHOICE_TYPES = frozenset({"auto", "any", "tool", "none"})
TOOL_CHOICES_WITH_THINKING = frozenset({"auto", "none"})
FORCED_TOOL_CHOICES = frozenset({"any", "tool"})
NO_FORCED_TOOL_MODELS = ("claude-opus-5-5", "claude-fable-5-1", "claude-mythos-5-1")
"""Models that refuse forced tool use (`tool_choice` any or tool) on every request
(build-with-claude/thinking, "Response prefill and forced tool use")."""
NO_SAMPLING_MODELS = (
    "claude-fable-5",
    "claude-mythos-5",
    "claude-opus-5",
    "claude-opus-4-8",
    "claude-opus-4-7",
    "claude-sonnet-5",
)
"""Models that refuse a non-default `temperature`, `top_p` or `top_k` on every request,
thinking or not (build-with-claude/thinking, "Sampling parameters"). The prefixes cover the
5.1 and 5.5 releases too (Fable 5.1, Mythos 5.1, Opus 5.5), which the page also names."""
THINKING_ON_BY_DEFAULT = ("claude-fable-5", "claude-mythos-5", "claude-opus-5", "claude-sonnet-5")
"""Models that think with no `thinking` field ("Always on" or "On" in the per-model table of
build-with-claude/thinking-troubleshooting); the Sonnet 5.5 and Haiku 5.5 rows are not there,
so they are taken as thinking too (the stricter reading)."""
REFUSED_THINKING_TYPES: tuple[tuple[str, frozenset[str]], ...] = (
    # Longest prefixes first: the first that matches decides.
    ("claude-opus-5-5", frozenset({"enabled", "disabled"})),
    ("claude-fable-5", frozenset({"enabled", "disabled"})),
    ("claude-mythos-5", frozenset({"enabled", "disabled"})),
    ("claude-opus-5", frozenset({"enabled"})),
    ("claude-opus-4-8", frozenset({"enabled"})),
    ("claude-opus-4-7", frozenset({"enabled"})),
    ("claude-sonnet-5", frozenset({"enabled"})),
    ("claude-opus-4-5", frozenset({"adaptive"})),
    ("claude-haiku-4-5", frozenset({"adaptive"})),
    ("claude-sonnet-4-5", frozenset({"adaptive"})),
)
"""`thinking.type` values each model refuses with a 400 (the table "Thinking support,
defaults, and rejected configurations by model", build-with-claude/thinking-troubleshooting,
fetched 2026-09-26). Opus 5's "disabled" is refused only at effort xhigh or max: not judged."""


def _model_prefixed(model: object, prefixes: Iterable[str]) -> bool:
    return isinstance(model, str) and any(model.startswith(p) for p in prefixes)


def refused_thinking_types(model: object) -> frozenset[str]:
    for prefix, refused in REFUSED_THINKING_TYPES:
        if _model_prefixed(model, (prefix,)):
            return refused
    return frozenset()


MIN_TOP_P_WITH_THINKING = 0.95


@attrs.frozen
class Violation:
    """One broken rule: a stable `rule` id, `where` in the body it is, and a readable `detail`."""

    rule: str
    where: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.where}: {self.detail}"


def violations(body: Mapping[str, Any], future_types: Iterable[str] = ()) -> list[Violation]:
    """Every rule `body` breaks, in body order; an empty list means the request is valid.

    `future_types` are block types a test stands in for ones the API adds later: they are
    accepted anywhere, unchecked."""
    try:
        checker = _Checker(body, frozenset(future_types))
        checker.run()
    except TypeError as error:
        # A field of a shape no rule expects (an object where a name goes, say), met by a
        # lookup before its own rule: the API's schema refuses such a body whole.
        return [Violation("body-invalid", "body", f"a field has the wrong type ({error})")]
    return checker.found


def assert_valid_request(body: Mapping[str, Any], future_types: Iterable[str] = ()) -> None:
    """Raise `AssertionError` listing every violation if `body` is not a valid request."""
    found = violations(body, future_types)
    if found:
        listing = "\n".join(f"  {violation}" for violation in found)
        raise AssertionError(f"invalid Anthropic Messages request ({len(found)}):\n{listing}")


def _is_int(value: object) -> TypeGuard[int]:
    # bool is an int subclass, and `True` is not a token count.
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_blank(text: object) -> bool:
    return not isinstance(text, str) or not text.strip()


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The well-formed blocks of a message (string content has none)."""
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, MAPPING)]


def _ids(blocks: list[Mapping[str, Any]], kind: str, key: str) -> list[str]:
    """The string `key` of each `kind` block: tool_use ids, or the ids tool_results answer."""
    return [
        block[key]
        for block in blocks
        if block.get("type") == kind and isinstance(block.get(key), str)
    ]


CALL_TYPES = frozenset({"tool_use"}) | SERVER_USE_TYPES


def _thinking_between_calls(content: Sequence[Any], j: int) -> bool:
    """Whether the thinking block at `j`, after other blocks, sits where today's models put
    one: in a run that ends the message (a cut progress update), precedes a tool call (a
    progress update, interleaved reasoning) or follows a server tool's result (reasoning
    between server tool calls), or flanks a `fallback` block: "when thinking runs flank the
    boundary, omitting the block merges them into one span the server cannot validate"
    (`BetaFallbackBlockParam`), so each model's run starts or ends at the block."""

    def kind(k: int) -> object:
        block = content[k]
        return block.get("type") if isinstance(block, MAPPING) else None

    after = j
    while after < len(content) and kind(after) in THINKING_TYPES:
        after += 1
    before = j
    while before >= 0 and kind(before) in THINKING_TYPES:
        before -= 1
    return (
        after == len(content)
        or kind(after) in CALL_TYPES | {"fallback"}
        or (before >= 0 and kind(before) in SERVER_RESULT_TYPES | {"fallback"})
    )


def is_paused_turn(message: Mapping[str, Any], *, results_only: bool = False) -> bool:
    """Whether an assistant message is a paused turn (`stop_reason: "pause_turn"`): it ends
    in a server tool's call (not run yet) or result; `results_only`: in a result."""
    blocks = _blocks(message)
    if message.get("role") != "assistant" or not blocks:
        return False
    ends = SERVER_RESULT_TYPES if results_only else SERVER_RESULT_TYPES | SERVER_USE_TYPES
    return blocks[-1].get("type") in ends


class _Checker:
    """Walks one body and collects its violations; each `check_*` covers one group of rules."""

    def __init__(self, body: Mapping[str, Any], future_types: frozenset[str] = frozenset()) -> None:
        self.body = body
        self.future_types = future_types
        self.found: list[Violation] = []
        raw_messages = body.get("messages")
        self.messages: list[Mapping[str, Any]] = (
            [message for message in raw_messages if isinstance(message, MAPPING)]
            if isinstance(raw_messages, list)
            else []
        )
        # Indexes into the body's list, so `where` stays right when some entries are malformed.
        self.message_indexes: list[int] = (
            [i for i, message in enumerate(raw_messages) if isinstance(message, MAPPING)]
            if isinstance(raw_messages, list)
            else []
        )
        # Each message's well-formed blocks and tool ids, found once: the pairing checks
        # read every message and its neighbours.
        self.block_lists = [_blocks(message) for message in self.messages]
        self.use_ids = [_ids(blocks, "tool_use", "id") for blocks in self.block_lists]
        self.result_ids = [
            _ids(blocks, "tool_result", "tool_use_id") for blocks in self.block_lists
        ]
        tools = body.get("tools")
        self.tool_names: set[str] = (
            {tool["name"] for tool in tools if isinstance(tool, MAPPING) and "name" in tool}
            if isinstance(tools, list)
            else set()
        )
        # Tools defined inline by a system message's `tool_addition` (inline-tools beta).
        for message in self.messages:
            content = message.get("content") if message.get("role") == "system" else None
            for block in content if isinstance(content, list) else ():
                tool = block.get("tool") if isinstance(block, MAPPING) else None
                definition = tool.get("definition") if isinstance(tool, MAPPING) else None
                if isinstance(definition, MAPPING) and isinstance(definition.get("name"), str):
                    self.tool_names.add(definition["name"])
        thinking = body.get("thinking")
        thinking_type = thinking.get("type") if isinstance(thinking, MAPPING) else None
        self.thinking_enabled = thinking_type == "enabled"
        self.thinking_active = thinking_type in {"enabled", "adaptive"}

    def check_binding(self) -> None:
        """Preserved thinking: a bound block's prefix is the one it was produced under
        (`tests.support.thinking_binding`); with `drop_block` the API drops it instead."""
        if not is_bound_model(self.body.get("model")) or drop_requested(self.body):
            return
        for i, j in binding_failures(self.body)[:1]:
            self.add("thinking-prefix-changed", f"messages[{i}].content[{j}]", PREFIX_MISMATCH)

    def add(self, rule: str, where: str, detail: str) -> None:
        if rule not in RULES:
            raise ValueError(f"unknown rule id {rule!r}; add it to RULES")
        self.found.append(Violation(rule=rule, where=where, detail=detail))

    def run(self) -> None:
        if self.check_block_types():
            return  # the API's schema refuses the body before any rule is read
        self.check_binding()
        self.check_top_level()
        self.check_system()
        self.check_tools()
        self.check_tool_choice()
        self.check_thinking_config()
        self.check_sampling()
        self.check_messages()
        self.check_tool_pairing()
        self.check_server_tool_pairing()
        self.check_thinking_tool_loop()
        self.check_cache_control()

    # -- top level -------------------------------------------------------------------------

    def check_top_level(self) -> None:
        model = self.body.get("model")
        if not isinstance(model, str) or not model.strip():
            self.add("model-invalid", "model", f"model must be a non-empty string, got {model!r}")
        max_tokens = self.body.get("max_tokens")
        if not _is_int(max_tokens) or max_tokens < 1:
            self.add(
                "max-tokens-invalid",
                "max_tokens",
                f"max_tokens must be an integer >= 1, got {max_tokens!r}",
            )
        messages = self.body.get("messages")
        if not isinstance(messages, list) or not messages:
            self.add("messages-invalid", "messages", "messages must be a non-empty list")
        elif len(messages) > MAX_MESSAGES:
            self.add(
                "messages-too-many",
                "messages",
                f"{len(messages)} messages; a request may hold at most {MAX_MESSAGES}",
            )

    def check_system(self) -> None:
        if "system" not in self.body:
            return
        system = self.body["system"]
        if isinstance(system, str):
            return
        if not isinstance(system, list):
            self.add(
                "system-invalid",
                "system",
                f"system must be a string or a list of text blocks, got {type(system).__name__}",
            )
            return
        for i, block in enumerate(system):
            where = f"system[{i}]"
            if not isinstance(block, MAPPING) or block.get("type") != "text":
                self.add("system-invalid", where, "system blocks must be {'type': 'text'} blocks")
            elif _is_blank(block.get("text")):
                self.add("system-invalid", where, "system text blocks must have non-blank text")

    def check_tools(self) -> None:
        tools = self.body.get("tools")
        if tools is None:
            return
        if not isinstance(tools, list):
            self.add("tools-invalid", "tools", f"tools must be a list, got {type(tools).__name__}")
            return
        seen: set[str] = set()
        for i, tool in enumerate(tools):
            where = f"tools[{i}]"
            if not isinstance(tool, MAPPING):
                self.add("tools-invalid", where, "each tool must be an object")
                continue
            if tool.get("type") == "mcp_toolset":
                # A toolset names its MCP server, not a tool (the SDK's BetaMCPToolsetParam).
                if _is_blank(tool.get("mcp_server_name")):
                    self.add("tools-invalid", where, "an mcp_toolset needs its mcp_server_name")
                continue
            name = tool.get("name")
            if not isinstance(name, str) or not TOOL_NAME_PATTERN.match(name):
                self.add(
                    "tool-name-invalid",
                    where,
                    f"tool name {name!r} must match {TOOL_NAME_PATTERN.pattern}",
                )
            elif name in seen:
                self.add("tool-name-duplicate", where, f"tool name {name!r} is defined twice")
            else:
                seen.add(name)
            schema = tool.get("input_schema")
            # Server and Anthropic-defined tools (`"type": "web_search_20250305"`, ...) carry
            # no schema; a custom tool needs one (agents-and-tools/tool-use/server-tools).
            custom = tool.get("type") in (None, "custom")
            if custom and (not isinstance(schema, MAPPING) or schema.get("type") != "object"):
                self.add(
                    "tool-schema-invalid",
                    f"{where}.input_schema",
                    "input_schema must be a JSON schema object with 'type': 'object'",
                )

    def check_tool_choice(self) -> None:
        if "tool_choice" not in self.body:
            return
        choice = self.body["tool_choice"]
        choice_type = choice.get("type") if isinstance(choice, MAPPING) else None
        if choice_type not in TOOL_CHOICE_TYPES:
            self.add(
                "tool-choice-invalid",
                "tool_choice",
                f"tool_choice type must be one of {sorted(TOOL_CHOICE_TYPES)}, got {choice!r}",
            )
        elif choice_type == "tool" and choice.get("name") not in self.tool_names:
            self.add(
                "tool-choice-invalid",
                "tool_choice.name",
                f"tool_choice names {choice.get('name')!r}, which is not a defined tool",
            )
        if choice_type in FORCED_TOOL_CHOICES and _model_prefixed(
            self.body.get("model"), NO_FORCED_TOOL_MODELS
        ):
            self.add(
                "tool-choice-unsupported",
                "tool_choice",
                f"{self.body.get('model')} refuses forced tool use (tool_choice {choice_type})",
            )

    def check_sampling(self) -> None:
        """Today's models refuse sampling parameters outright; older ones only with thinking."""
        model = self.body.get("model")
        if not _model_prefixed(model, NO_SAMPLING_MODELS):
            return
        for name in ("temperature", "top_p", "top_k"):
            if name in self.body and not (name == "temperature" and self.body[name] == 1):
                self.add(
                    "sampling-unsupported",
                    name,
                    f"{model} refuses a non-default {name} on every request",
                )

    def check_thinking_config(self) -> None:
        if "thinking" not in self.body:
            return
        thinking = self.body["thinking"]
        if not isinstance(thinking, MAPPING) or thinking.get("type") not in THINKING_CONFIG_TYPES:
            self.add(
                "thinking-config-invalid",
                "thinking",
                f"thinking must be an object with type in {sorted(THINKING_CONFIG_TYPES)}",
            )
            return
        if thinking.get("type") in refused_thinking_types(self.body.get("model")):
            self.add(
                "thinking-config-invalid",
                "thinking.type",
                f'"thinking.type.{thinking.get("type")}" is not supported for this model',
            )
        if self.thinking_active and not _model_prefixed(self.body.get("model"), NO_SAMPLING_MODELS):
            self.check_sampling_with_thinking()
        if not self.thinking_enabled:
            return
        budget = thinking.get("budget_tokens")
        max_tokens = self.body.get("max_tokens")
        if not _is_int(budget) or budget < MIN_THINKING_BUDGET:
            self.add(
                "thinking-budget-invalid",
                "thinking.budget_tokens",
                f"budget_tokens must be an integer >= {MIN_THINKING_BUDGET}, got {budget!r}",
            )
        elif _is_int(max_tokens) and budget >= max_tokens:
            self.add(
                "thinking-budget-invalid",
                "thinking.budget_tokens",
                f"budget_tokens ({budget}) must be less than max_tokens ({max_tokens})",
            )
        choice = self.body.get("tool_choice")
        if isinstance(choice, MAPPING) and choice.get("type") not in TOOL_CHOICES_WITH_THINKING:
            # Manual thinking only: adaptive thinking takes forced tool use
            # (build-with-claude/thinking, "Thinking with tool use").
            self.add(
                "thinking-tool-choice",
                "tool_choice",
                f"with thinking enabled tool_choice may only be auto or none, got {choice!r}",
            )

    def check_sampling_with_thinking(self) -> None:
        """Before today's models, sampling parameters are refused only while thinking is on,
        adaptive thinking included (build-with-claude/thinking, "Sampling parameters")."""
        if "temperature" in self.body:
            self.add(
                "thinking-temperature", "temperature", "temperature is incompatible with thinking"
            )
        if "top_k" in self.body:
            self.add("thinking-top-k", "top_k", "top_k is incompatible with thinking")
        if "top_p" in self.body:
            top_p = self.body["top_p"]
            if not _is_number(top_p) or not MIN_TOP_P_WITH_THINKING <= top_p <= 1:
                self.add(
                    "thinking-top-p",
                    "top_p",
                    f"with thinking enabled top_p must be in [0.95, 1], got {top_p!r}",
                )

    # -- messages and blocks ---------------------------------------------------------------

    def check_messages(self) -> None:
        raw_messages = self.body.get("messages")
        if not isinstance(raw_messages, list):
            return
        last = len(raw_messages) - 1
        previous_role: object = None
        for i, message in enumerate(raw_messages):
            where = f"messages[{i}]"
            if not isinstance(message, MAPPING):
                self.add("message-invalid", where, "each message must be an object")
                previous_role = None
                continue
            role = message.get("role")
            if role == "system":
                self.check_system_message(raw_messages, i, where)
                continue
            if role not in ROLES:
                self.add(
                    "role-unknown", f"{where}.role", f"role must be user or assistant, got {role!r}"
                )
            if i == 0 and role != "user" and not _leads_with_compaction(message):
                self.add(
                    "first-message-user", where, f"the first message must be user, got {role!r}"
                )
            if i > 0 and role in ROLES and role == previous_role and not self.continues_pause(i):
                self.add(
                    "roles-not-alternating",
                    where,
                    f"two consecutive {role} messages; merge them into one",
                )
            previous_role = role
            is_prefill = i == last and role == "assistant"
            self.check_content(message, where, is_prefill=is_prefill)
            if (
                is_prefill
                and self.thinks()
                and not is_paused_turn(message)
                # A compaction request summarizes and writes no reply: it may follow any
                # completed turn (build-with-claude/compaction-on-demand).
                and "compaction" not in self.body
            ):
                self.add(
                    "prefill-with-thinking",
                    where,
                    "a final assistant message (a prefill) cannot be sent while thinking is on",
                )

    def continues_pause(self, i: int) -> bool:
        """Whether message `i` is an assistant message right after a paused assistant turn
        (stop reason `pause_turn`, re-sent as it is): the continuation the API returned,
        which it combines with the paused turn (consecutive turns are joined)."""
        raw_messages = self.body["messages"]
        previous = raw_messages[i - 1]
        return (
            raw_messages[i].get("role") == "assistant"
            and isinstance(previous, MAPPING)
            and previous.get("role") == "assistant"
            and is_paused_turn(previous)
        )

    def thinks(self) -> bool:
        """Whether the request runs with thinking on: asked for, or the model's default
        (build-with-claude/thinking-troubleshooting, the per-model table)."""
        thinking = self.body.get("thinking")
        if isinstance(thinking, MAPPING):
            return thinking.get("type") in {"enabled", "adaptive"}
        return _model_prefixed(self.body.get("model"), THINKING_ON_BY_DEFAULT)

    def check_system_message(self, raw_messages: list[Any], i: int, where: str) -> None:
        """A `role: "system"` message: only on models that take it, after a user turn (or
        another system message), never first, followed by an assistant turn or last."""
        if not takes_system_messages(self.body.get("model")):
            self.add("role-system", f"{where}.role", "role 'system' is not supported on this model")
            return
        previous = raw_messages[i - 1] if i > 0 else None
        following = raw_messages[i + 1] if i + 1 < len(raw_messages) else None
        previous_role = previous.get("role") if isinstance(previous, MAPPING) else None
        following_role = following.get("role") if isinstance(following, MAPPING) else None
        # After a paused assistant turn (one ending in a server tool's result) a system message
        # may follow, but with text only (build-with-claude/mid-conversation-system-messages,
        # "Limitations").
        after_pause = (
            previous_role == "assistant"
            and isinstance(previous, MAPPING)
            and is_paused_turn(previous, results_only=True)
        )
        if i == 0:
            self.add("system-message-misplaced", where, "a system message cannot be first")
        elif previous_role not in ("user", "system") and not after_pause:
            self.add(
                "system-message-misplaced",
                where,
                f"a system message must follow a user turn, not {previous_role!r}",
            )
        if following is not None and following_role not in ("assistant", "system"):
            self.add(
                "system-message-misplaced",
                where,
                f"a system message must be followed by an assistant turn, not {following_role!r}",
            )
        message = raw_messages[i]
        # Its own fields (SDK `BetaSystemMessageParam`): `clear_at`, `output_config`; a
        # message of an `output_config` with fields needs no content, one with neither is
        # refused.
        if message.get("clear_at") not in (None, "next_user_message", "never"):
            self.add("system-message-invalid", f"{where}.clear_at", "clear_at is not valid")
        config = message.get("output_config")
        if config is not None and not isinstance(config, MAPPING):
            self.add("system-message-invalid", f"{where}.output_config", "must be an object")
        if "content" not in message and isinstance(config, MAPPING) and config:
            return
        content = message.get("content")
        if isinstance(content, str):
            if not content.strip():
                self.add("content-empty", f"{where}.content", "message content must not be blank")
            return
        if not isinstance(content, list) or not content:
            self.add("system-message-invalid", f"{where}.content", "content must be a list")
            return
        for j, block in enumerate(content):
            kind = block.get("type") if isinstance(block, MAPPING) else None
            if kind not in SYSTEM_MESSAGE_BLOCK_TYPES:
                self.add(
                    "system-message-invalid",
                    f"{where}.content[{j}]",
                    f"a system message holds text, tool_addition and tool_removal, not {kind!r}",
                )
            elif kind == "text":
                self.check_text(block, f"{where}.content[{j}]")
            elif after_pause:
                self.add(
                    "system-message-misplaced",
                    f"{where}.content[{j}]",
                    f"{kind} blocks are not accepted right after a paused assistant turn",
                )

    def check_compaction_block(self, block: Mapping[str, Any], where: str, role: object) -> None:
        """The API's `compaction` block: in an assistant message, the first block of the
        conversation (build-with-claude/compaction-on-demand), with a string signature while
        it has content."""
        if role != "assistant" or where != "messages[0].content[0]":
            self.add(
                "compaction-misplaced",
                where,
                "a compaction block must be the first block of the conversation, in the "
                "assistant message it came in",
            )
        if block.get("content") is not None and not isinstance(block.get("signature"), str):
            self.add("compaction-invalid", where, "a compaction block needs its signature")

    def check_content(self, message: Mapping[str, Any], where: str, *, is_prefill: bool) -> None:
        if "content" not in message:
            self.add("message-invalid", where, "message has no 'content'")
            return
        content = message["content"]
        if isinstance(content, str):
            if is_prefill:
                if content != content.rstrip():
                    self.add(
                        "prefill-trailing-whitespace",
                        f"{where}.content",
                        "a final assistant message must not end with whitespace",
                    )
            elif not content.strip():
                self.add("content-empty", f"{where}.content", "message content must not be blank")
            return
        if not isinstance(content, list):
            self.add(
                "message-invalid",
                f"{where}.content",
                f"content must be a string or a list of blocks, got {type(content).__name__}",
            )
            return
        if not content:
            if not is_prefill:
                self.add(
                    "content-empty",
                    f"{where}.content",
                    "only a final assistant message may have empty content",
                )
            return
        role = message.get("role")
        seen_other = False
        seen_non_thinking = False
        for j, block in enumerate(content):
            block_where = f"{where}.content[{j}]"
            if not isinstance(block, MAPPING):
                self.add("block-invalid", block_where, "each content block must be an object")
                continue
            block_type = block.get("type")
            self.check_block(block, block_where, role)
            if block_type == "tool_result" and role == "user" and seen_other:
                self.add(
                    "tool-result-not-first",
                    block_where,
                    "tool_result blocks must come before any other block in a user message",
                )
            elif block_type != "tool_result":
                seen_other = True
            if (
                block_type in THINKING_TYPES
                and role == "assistant"
                and seen_non_thinking
                and not _thinking_between_calls(content, j)
            ):
                self.add(
                    "thinking-order",
                    block_where,
                    "a thinking block after other blocks must precede a tool call or follow a "
                    "server tool's result",
                )
            elif block_type not in THINKING_TYPES and block_type != "compaction":
                # The API's block leads the kept reply it joins (compaction-thinking-blocks):
                # that reply's thinking still starts it.
                seen_non_thinking = True
        last_block = content[-1]
        if isinstance(last_block, MAPPING):
            # Only the request's final message: an earlier reply may end with the progress
            # update of a turn cut at max_tokens, sent back unchanged (build-with-claude/
            # thinking, "Progress updates between tool calls").
            if is_prefill and last_block.get("type") in THINKING_TYPES:
                self.add(
                    "thinking-last-block",
                    f"{where}.content[{len(content) - 1}]",
                    "the final block of the final assistant message cannot be a thinking block",
                )
            text = last_block.get("text")
            if (
                is_prefill
                and last_block.get("type") == "text"
                and isinstance(text, str)
                and text != text.rstrip()
            ):
                self.add(
                    "prefill-trailing-whitespace",
                    f"{where}.content[{len(content) - 1}]",
                    "a final assistant message must not end with whitespace",
                )

    def check_block(self, block: Mapping[str, Any], where: str, role: object) -> None:
        block_type = block.get("type")
        if block_type in self.future_types:
            return
        if block_type in USER_ONLY_TYPES | SERVER_USE_TYPES | SERVER_RESULT_TYPES | UNMARKED_TYPES:
            self.check_other_block(block, where, role)
            return
        if block_type == "compaction":
            self.check_compaction_block(block, where, role)
            return
        if block_type not in BLOCK_TYPES:
            self.add(
                "block-type-unknown",
                where,
                f"block type {block_type!r} is not one of {sorted(BLOCK_TYPES)}",
            )
            return
        if block_type == "text":
            self.check_text(block, where)
        elif block_type == "image":
            self.check_image(block, where)
        elif block_type == "tool_use":
            if role != "assistant":
                self.add(
                    "tool-use-not-assistant", where, "tool_use blocks belong in assistant messages"
                )
            self.check_tool_use(block, where)
        elif block_type == "tool_result":
            if role != "user":
                self.add(
                    "tool-result-not-user", where, "tool_result blocks belong in user messages"
                )
            self.check_tool_result(block, where)
        else:
            if role != "assistant":
                self.add(
                    "thinking-not-assistant",
                    where,
                    f"{block_type} blocks belong in assistant messages",
                )
            self.check_thinking_block(block, where)

    def check_text(self, block: Mapping[str, Any], where: str) -> None:
        text = block.get("text")
        if not isinstance(text, str):
            self.add("block-invalid", where, f"text block needs a string 'text', got {text!r}")
        elif not text.strip():
            self.add("text-empty", where, "text blocks must be non-empty and not whitespace-only")

    def check_image(self, block: Mapping[str, Any], where: str) -> None:
        source = block.get("source")
        if not isinstance(source, MAPPING):
            source = {}
        source_type = source.get("type")
        if source_type == "base64":
            if source.get("media_type") not in IMAGE_MEDIA_TYPES or _is_blank(source.get("data")):
                self.add(
                    "image-invalid",
                    where,
                    f"a base64 image needs data and a media_type in {sorted(IMAGE_MEDIA_TYPES)}",
                )
        elif source_type == "url":
            if _is_blank(source.get("url")):
                self.add("image-invalid", where, "a url image needs a non-empty 'url'")
        elif source_type == "file":
            # A Files API upload (build-with-claude/vision: base64, url or file_id sources).
            if _is_blank(source.get("file_id")):
                self.add("image-invalid", where, "a file image needs a non-empty 'file_id'")
        else:
            self.add("image-invalid", where, "image source must be of type base64, url or file")

    def check_tool_use(self, block: Mapping[str, Any], where: str) -> None:
        tool_id = block.get("id")
        if not isinstance(tool_id, str) or not TOOL_USE_ID_PATTERN.match(tool_id):
            self.add(
                "tool-use-id-invalid",
                where,
                f"tool_use id {tool_id!r} must match {TOOL_USE_ID_PATTERN.pattern}",
            )
        name = block.get("name")
        if not isinstance(name, str) or not TOOL_NAME_PATTERN.match(name):
            self.add(
                "tool-use-name-invalid",
                where,
                f"tool_use name {name!r} must match {TOOL_NAME_PATTERN.pattern}",
            )
        elif name not in self.tool_names and isinstance(self.body.get("tools"), list):
            self.add("tool-use-undefined", where, f"tool {name!r} is not defined in 'tools'")
        if not isinstance(block.get("input"), MAPPING):
            self.add("tool-use-input-invalid", where, "tool_use input must be an object")

    def check_tool_result(self, block: Mapping[str, Any], where: str) -> None:
        if not isinstance(block.get("tool_use_id"), str):
            self.add("tool-result-invalid", where, "tool_result needs a string 'tool_use_id'")
        if "is_error" in block and not isinstance(block["is_error"], bool):
            self.add("tool-result-invalid", f"{where}.is_error", "is_error must be a boolean")
        if "content" not in block:
            return
        content = block["content"]
        if isinstance(content, str):
            return
        if not isinstance(content, list):
            self.add(
                "tool-result-content-invalid",
                f"{where}.content",
                "tool_result content must be a string or a list of text/image blocks",
            )
            return
        for k, inner in enumerate(content):
            inner_where = f"{where}.content[{k}]"
            inner_type = inner.get("type") if isinstance(inner, MAPPING) else None
            if inner_type in self.future_types:
                continue
            if inner_type not in TOOL_RESULT_CONTENT_TYPES:
                self.add(
                    "tool-result-content-invalid",
                    inner_where,
                    f"tool_result content blocks must be text or image, got {inner_type!r}",
                )
            elif inner_type == "text" and _is_blank(inner.get("text")):
                self.add(
                    "tool-result-content-invalid",
                    inner_where,
                    "text blocks inside a tool_result must be non-empty",
                )
            elif inner_type == "image":
                self.check_image(inner, inner_where)
            elif inner_type == "document":
                self.check_document(inner, inner_where)
            elif inner_type == "search_result":
                self.check_search_result(inner, inner_where)
            elif inner_type == "tool_reference" and _is_blank(inner.get("tool_name")):
                self.add(
                    "tool-result-content-invalid", inner_where, "tool_reference needs a tool_name"
                )

    def check_thinking_block(self, block: Mapping[str, Any], where: str) -> None:
        if block.get("type") == "thinking":
            signature = block.get("signature")
            if not isinstance(signature, str) or not signature:
                self.add(
                    "thinking-invalid",
                    where,
                    "a thinking block needs its non-empty 'signature', sent back unmodified",
                )
            if not isinstance(block.get("thinking"), str):
                self.add("thinking-invalid", where, "a thinking block needs a string 'thinking'")
        else:
            data = block.get("data")
            if not isinstance(data, str) or not data:
                self.add(
                    "redacted-thinking-invalid",
                    where,
                    "a redacted_thinking block needs its non-empty 'data'",
                )

    def check_other_block(self, block: Mapping[str, Any], where: str, role: object) -> None:
        block_type = block.get("type")
        if block_type in USER_ONLY_TYPES and role != "user":
            self.add("block-misplaced", where, f"{block_type} blocks belong in user messages")
        if block_type in SERVER_USE_TYPES | SERVER_RESULT_TYPES | UNMARKED_TYPES and (
            role != "assistant"
        ):
            self.add("block-misplaced", where, f"{block_type} blocks belong in assistant messages")
        if block_type in UNMARKED_TYPES:
            self.check_unmarked(block, where)
            return
        if block_type == "document":
            self.check_document(block, where)
        elif block_type == "search_result":
            self.check_search_result(block, where)
        elif block_type == "container_upload" and _is_blank(block.get("file_id")):
            self.add("block-invalid", where, "container_upload needs a file_id")
        elif block_type in SERVER_USE_TYPES:
            tool_id = block.get("id")
            if not isinstance(tool_id, str) or not TOOL_USE_ID_PATTERN.match(tool_id):
                self.add("server-tool-use-invalid", where, f"bad server tool id {tool_id!r}")
            if _is_blank(block.get("name")) or not isinstance(block.get("input"), MAPPING):
                self.add("server-tool-use-invalid", where, "server_tool_use needs name and input")
        elif block_type in SERVER_RESULT_TYPES and not isinstance(block.get("tool_use_id"), str):
            self.add("server-tool-result-orphan", where, f"{block_type} needs a tool_use_id")

    def check_unmarked(self, block: Mapping[str, Any], where: str) -> None:
        """A `fallback` names the models of its hop (`from` and `to`, each with its `model`);
        an `mcp_tool_listing` its server and the tools it listed. Neither takes a
        breakpoint."""
        if "cache_control" in block:
            self.add(
                "cache-control-invalid",
                f"{where}.cache_control",
                f"a {block.get('type')} block takes no cache_control",
            )
        if block.get("type") == "fallback":
            hops = [block.get("from"), block.get("to")]
            if not all(isinstance(h, MAPPING) and not _is_blank(h.get("model")) for h in hops):
                self.add("block-invalid", where, "a fallback block needs 'from' and 'to' models")
        elif _is_blank(block.get("mcp_server_name")) or not isinstance(block.get("tools"), list):
            self.add(
                "block-invalid", where, "an mcp_tool_listing needs its mcp_server_name and tools"
            )

    def check_document(self, block: Mapping[str, Any], where: str) -> None:
        source = block.get("source")
        source_type = source.get("type") if isinstance(source, MAPPING) else None
        needs = {"base64": "data", "text": "data", "url": "url", "file": "file_id"}
        if not isinstance(source, MAPPING) or source_type not in {*needs, "content"}:
            self.add(
                "document-invalid", where, "a document needs a base64/text/url/file/content source"
            )
        elif source_type == "text" and not isinstance(source.get("data"), str):
            # Empty is valid: the API's own web fetch of an empty page returns a text document
            # whose data is "", and a conversation sends it back as it came.
            self.add("document-invalid", where, "a text document needs its data as a string")
        elif (
            source_type in needs
            and source_type != "text"
            and _is_blank(source.get(needs[source_type]))
        ):
            self.add(
                "document-invalid",
                where,
                f"a {source_type} document needs its {needs[source_type]}",
            )
        elif source_type == "base64" and source.get("media_type") != "application/pdf":
            self.add("document-invalid", where, "a base64 document must be application/pdf")

    def check_search_result(self, block: Mapping[str, Any], where: str) -> None:
        content = block.get("content")
        if (
            _is_blank(block.get("source"))
            or not isinstance(block.get("title"), str)
            or not isinstance(content, list)
            or not content
            or any(
                not isinstance(c, MAPPING) or c.get("type") != "text" or _is_blank(c.get("text"))
                for c in content
            )
        ):
            self.add(
                "search-result-invalid",
                where,
                "a search_result needs a source, a title and non-empty text blocks",
            )

    def check_server_tool_pairing(self) -> None:
        """A server tool's result follows its call in the same assistant message, except in
        two cases (agents-and-tools/tool-use/server-tools): a call made beside client tool
        calls runs once their results come back, its result first in the next assistant
        message, and the user message between holds only `tool_result` blocks (anything
        more ends the turn, a 400 naming the call); a paused turn (`pause_turn`) may end in a
        call not run yet, when it is the request's last message or its continuation follows."""
        pending: dict[str, str] = {}
        pending_from = ""
        for position, (i, blocks) in enumerate(
            zip(self.message_indexes, self.block_lists, strict=True)
        ):
            role = self.messages[position].get("role")
            if role == "system":
                continue
            if role == "user":
                if pending and any(b.get("type") != "tool_result" for b in blocks):
                    self.add(
                        "server-tool-turn-ended",
                        f"messages[{i}]",
                        f"server tool calls {sorted(pending)} of {pending_from} are not run "
                        "yet: the user message after them may hold only tool_result blocks",
                    )
                    pending = {}
                continue
            uses: list[str] = []
            answered: set[str] = set()
            for j, block in enumerate(blocks):
                if block.get("type") in SERVER_USE_TYPES and isinstance(block.get("id"), str):
                    uses.append(block["id"])
                elif block.get("type") in SERVER_RESULT_TYPES:
                    tool_use_id = block.get("tool_use_id")
                    if tool_use_id in pending and tool_use_id not in answered:
                        pending.pop(str(tool_use_id))
                    elif tool_use_id not in uses or tool_use_id in answered:
                        self.add(
                            "server-tool-result-orphan",
                            f"messages[{i}].content[{j}]",
                            f"{block.get('type')} for {tool_use_id!r} answers no earlier "
                            "server tool call of the same message (or answers it twice)",
                        )
                    answered.add(str(tool_use_id))
            for tool_use_id, where in pending.items():
                self.add(
                    "server-tool-use-unanswered",
                    where,
                    f"server tool call {tool_use_id!r} has no result in the next assistant message",
                )
            waiting = [u for u in uses if u not in answered]
            last = position == len(self.messages) - 1
            following = self.next_spoken(position) if waiting else None
            carried = last or (
                following is not None
                and (
                    self.use_ids[position]
                    or (
                        following.get("role") == "assistant"
                        and is_paused_turn(self.messages[position])
                    )
                )
            )
            pending = {}
            for tool_use_id in waiting:
                if carried:
                    pending[tool_use_id] = f"messages[{i}]"
                else:
                    self.add(
                        "server-tool-use-unanswered",
                        f"messages[{i}]",
                        f"server tool call {tool_use_id!r} has no result in the same message",
                    )
            pending_from = f"messages[{i}]"

    def next_spoken(self, position: int) -> Mapping[str, Any] | None:
        """The next user or assistant message after `position`, if any."""
        for k in range(position + 1, len(self.messages)):  # no slice: called per message
            if self.messages[k].get("role") in ROLES:
                return self.messages[k]
        return None

    # -- tool pairing ----------------------------------------------------------------------

    def check_tool_pairing(self) -> None:
        has_tool_blocks = False
        seen_use_ids: set[str] = set()
        seen_result_ids: set[str] = set()
        messages = self.messages
        for position, message in enumerate(messages):
            where = f"messages[{self.message_indexes[position]}]"
            use_ids = self.use_ids[position]
            result_ids = self.result_ids[position]
            has_tool_blocks = has_tool_blocks or any(
                block.get("type") in {"tool_use", "tool_result"}
                for block in self.block_lists[position]
            )
            for tool_id in use_ids:
                if tool_id in seen_use_ids:
                    self.add(
                        "tool-use-id-duplicate",
                        where,
                        f"tool_use id {tool_id!r} is used more than once in the request",
                    )
                seen_use_ids.add(tool_id)
            for tool_id in result_ids:
                if tool_id in seen_result_ids:
                    self.add(
                        "tool-result-duplicate",
                        where,
                        f"more than one tool_result for tool_use id {tool_id!r}",
                    )
                seen_result_ids.add(tool_id)
            if use_ids and message.get("role") == "assistant":
                self.check_answered(position, use_ids)
            if result_ids and message.get("role") == "user":
                self.check_not_orphan(position, result_ids)
        if has_tool_blocks:
            tools = self.body.get("tools")
            if not isinstance(tools, list) or not tools:
                self.add(
                    "tools-missing",
                    "tools",
                    "requests with tool_use or tool_result blocks must define tools",
                )

    def check_answered(self, position: int, use_ids: Sequence[str]) -> None:
        where = f"messages[{self.message_indexes[position]}]"
        following = self.following_message(position)
        answered = set(self.result_ids[position + 1]) if following is not None else set()
        if following is not None and following.get("role") != "user":
            answered = set()
        missing = [tool_id for tool_id in use_ids if tool_id not in answered]
        if missing:
            self.add(
                "tool-use-unanswered",
                where,
                f"tool_use ids {missing} have no tool_result in the immediately next user message",
            )

    def check_not_orphan(self, position: int, result_ids: Sequence[str]) -> None:
        where = f"messages[{self.message_indexes[position]}]"
        preceding = self.preceding_message(position)
        issued: set[str] = set()
        if preceding is not None and preceding.get("role") == "assistant":
            issued = set(self.use_ids[position - 1])
        orphans = [tool_id for tool_id in result_ids if tool_id not in issued]
        if orphans:
            self.add(
                "tool-result-orphan",
                where,
                f"tool_result ids {orphans} match no tool_use in the immediately previous "
                "assistant message",
            )

    def following_message(self, position: int) -> Mapping[str, Any] | None:
        """The next entry of the body's list, if it is a well-formed message."""
        index = self.message_indexes[position]
        if position + 1 < len(self.messages) and self.message_indexes[position + 1] == index + 1:
            return self.messages[position + 1]
        return None

    def preceding_message(self, position: int) -> Mapping[str, Any] | None:
        """The previous entry of the body's list, if it is a well-formed message."""
        index = self.message_indexes[position]
        if position > 0 and self.message_indexes[position - 1] == index - 1:
            return self.messages[position - 1]
        return None

    def check_thinking_tool_loop(self) -> None:
        """With thinking on, the assistant turn of an active tool loop must open with thinking.

        A tool loop (assistant tool_use, user tool_result, assistant tool_use, ...) is one
        assistant turn: the API checks its first assistant message, the one right after the
        last user message that carries no tool_result. Later messages of the loop may have no
        thinking (the model only thinks between tool calls with interleaved thinking).
        """
        if not self.thinking_enabled or not self.messages:
            return
        spoken = [k for k, m in enumerate(self.messages) if m.get("role") != "system"]
        if not spoken:
            return
        last = self.messages[spoken[-1]]
        if last.get("role") != "user" or not self.result_ids[spoken[-1]]:
            return
        turn_start: int | None = None
        for position in reversed(spoken):
            message = self.messages[position]
            if message.get("role") == "assistant":
                turn_start = position
            elif not self.result_ids[position]:
                break
        if turn_start is None:
            return
        blocks = self.block_lists[turn_start]
        if not blocks or blocks[0].get("type") not in THINKING_TYPES:
            self.add(
                "thinking-tool-loop",
                f"messages[{self.message_indexes[turn_start]}].content[0]",
                "with thinking enabled, the assistant message that opens the active tool loop "
                "must start with its thinking or redacted_thinking block",
            )

    # -- prompt caching --------------------------------------------------------------------

    def cache_sites(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """Every object that may carry cache_control, in request order: tools, system, messages."""
        tools = self.body.get("tools")
        if isinstance(tools, list):
            for i, tool in enumerate(tools):
                if isinstance(tool, MAPPING):
                    yield f"tools[{i}]", tool
        system = self.body.get("system")
        if isinstance(system, list):
            for i, block in enumerate(system):
                if isinstance(block, MAPPING):
                    yield f"system[{i}]", block
        for position, message in enumerate(self.messages):
            content = message.get("content")
            if not isinstance(content, list):
                continue
            where = f"messages[{self.message_indexes[position]}]"
            for j, block in enumerate(content):
                if not isinstance(block, MAPPING):
                    continue
                yield f"{where}.content[{j}]", block
                inner = block.get("content") if block.get("type") == "tool_result" else None
                if isinstance(inner, list):
                    for k, inner_block in enumerate(inner):
                        if isinstance(inner_block, MAPPING):
                            yield f"{where}.content[{j}].content[{k}]", inner_block

    def check_block_types(self) -> bool:
        """Whether a block (of the system prompt, a message, a tool result) or a tool has a
        `type` that is not a string: refused whole, as the API's schema refuses it."""
        for where, site in self.cache_sites():
            if "type" in site and not isinstance(site["type"], str | None):
                self.add("block-invalid", where, f"'type' must be a string, got {site['type']!r}")
        return bool(self.found)

    def check_cache_control(self) -> None:
        breakpoints: list[tuple[str, Mapping[str, Any]]] = []
        for where, site in self.cache_sites():
            if "cache_control" not in site:
                continue
            breakpoints.append((f"{where}.cache_control", site["cache_control"]))
            block_type = site.get("type")
            if block_type in THINKING_TYPES:
                self.add(
                    "cache-control-on-thinking",
                    where,
                    "thinking blocks cannot carry cache_control",
                )
            elif block_type == "text" and _is_blank(site.get("text")):
                self.add(
                    "cache-control-on-empty-text",
                    where,
                    "empty text blocks cannot carry cache_control",
                )
        # Automatic caching puts its breakpoint on the last cacheable block: last in order.
        if "cache_control" in self.body:
            breakpoints.append(("cache_control", self.body["cache_control"]))
        if len(breakpoints) > MAX_CACHE_BREAKPOINTS:
            self.add(
                "cache-control-too-many",
                breakpoints[MAX_CACHE_BREAKPOINTS][0],
                f"{len(breakpoints)} cache breakpoints; at most {MAX_CACHE_BREAKPOINTS} are "
                "allowed (top-level cache_control takes one)",
            )
        first_short: str | None = None
        for where, cache_control in breakpoints:
            ttl = self.check_cache_control_value(where, cache_control)
            if ttl == "5m" and first_short is None:
                first_short = where
            elif ttl == "1h" and first_short is not None:
                self.add(
                    "cache-control-ttl-order",
                    where,
                    f"a 1h cache entry must not come after the 5m entry at {first_short}",
                )

    def check_cache_control_value(self, where: str, cache_control: object) -> str | None:
        """Report a malformed cache_control; return its effective TTL when it is well formed."""
        if not isinstance(cache_control, MAPPING) or cache_control.get("type") != "ephemeral":
            self.add(
                "cache-control-invalid",
                where,
                f"cache_control must be {{'type': 'ephemeral'}}, got {cache_control!r}",
            )
            return None
        ttl = cache_control.get("ttl", "5m")
        if ttl not in CACHE_TTLS:
            self.add(
                "cache-control-invalid",
                f"{where}.ttl",
                f"cache_control ttl must be one of {sorted(CACHE_TTLS)}, got {ttl!r}",
            )
            return None
        return str(ttl)
