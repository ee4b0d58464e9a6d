"""The checks a message must pass before it joins a session's history.

Each check raises a specific `InvalidMessageError` naming what is wrong, so a host app can
tell a bad message from a bad request and nothing half-valid is ever recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping, Sequence

from abridged.domain.errors import (
    DuplicateToolIdError,
    EmptyContentError,
    InvalidMessageError,
    InvalidSettingsError,
    MalformedBlockError,
    MalformedToolIdError,
    MessageAlreadyAppendedError,
    MisplacedBlockError,
    OrphanToolResultError,
    RoleOrderError,
    UnansweredToolUseError,
    UnsignedThinkingError,
)
from abridged.domain.media_checks import check_document, check_image
from abridged.domain.messages import (
    NESTED_ONLY_TYPES,
    SERVER_TOOL_RESULT_TYPES,
    SERVER_TOOL_USE_TYPES,
    TOOL_CHANGE_TYPES,
    TOOL_ID_PATTERN,
    TOOL_NAME_PATTERN,
    UNMARKED_REPLY_TYPES,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireBlock,
)
from abridged.domain.reply_shapes import (
    MessageAt,
    check_appended,
    check_server_tool_pairs,
    check_unmarked,
    is_paused_turn,
    leads_with_compaction,
    thinking_between_calls,
)
from abridged.domain.system_messages import check_system_fields, check_system_placement


def check_blocks(message: Message) -> None:
    """Checks a message on its own: block shapes, placement for its role, ids and text."""
    if message.role is Role.SYSTEM:
        check_system_fields(message)
        _check_system_blocks(message)
        return
    if not message.content:
        raise EmptyContentError(f"a {message.role.value} message needs at least one block")
    seen_other = False
    seen_non_thinking = False
    for index, block in enumerate(message.content):
        where = f"block {index}"
        if isinstance(block, TextBlock):
            _check_text(block.text, where)
        elif isinstance(block, ImageBlock):
            check_image(block, where)
        elif isinstance(block, ToolUseBlock):
            if message.role is not Role.ASSISTANT:
                raise MisplacedBlockError(f"{where}: tool_use blocks belong in assistant messages")
            _check_tool_id(block.id, where)
            if not TOOL_NAME_PATTERN.fullmatch(block.name):
                raise MalformedToolIdError(
                    f"{where}: tool name {block.name!r} must match ^[a-zA-Z0-9_-]{{1,64}}$"
                )
        elif isinstance(block, ToolResultBlock):
            if message.role is not Role.USER:
                raise MisplacedBlockError(f"{where}: tool_result blocks belong in user messages")
            if seen_other:
                raise MisplacedBlockError(
                    f"{where}: tool_result blocks must come before any text or image"
                )
            _check_tool_id(block.tool_use_id, where)
            _check_result_content(block, f"{where} (tool_result content)")
        elif isinstance(block, WireBlock):
            if block.type == "compaction":
                _check_compaction(block, index, message.role, where)
            _check_wire(block, where, role=message.role)
        elif isinstance(block, ThinkingBlock | RedactedThinkingBlock):
            if message.role is not Role.ASSISTANT:
                raise MisplacedBlockError(f"{where}: thinking blocks belong in assistant messages")
            if seen_non_thinking and not thinking_between_calls(message.content, index):
                raise MisplacedBlockError(
                    f"{where}: a thinking block comes first, right before a tool call or right "
                    "after a server tool's result"
                )
            if isinstance(block, ThinkingBlock) and not block.signature:
                raise UnsignedThinkingError(
                    f"{where}: a thinking block needs the signature the model returned with it"
                )
            if isinstance(block, RedactedThinkingBlock) and not block.data:
                raise MalformedBlockError(f"{where}: a redacted_thinking block needs its data")
        if not isinstance(block, ToolResultBlock):
            seen_other = True
        if not isinstance(block, ThinkingBlock | RedactedThinkingBlock) and not (
            index == 0 and leads_with_compaction(message)
        ):
            # The API's compaction block leads the kept reply it joins: that reply's own
            # thinking still starts it (build-with-claude/compaction-thinking-blocks).
            seen_non_thinking = True
    if isinstance(message.content[-1], ThinkingBlock | RedactedThinkingBlock):
        raise MisplacedBlockError("an assistant message cannot end with a thinking block")
    _check_unique(message.tool_uses)
    check_server_tool_pairs(message)
    ids = [r.tool_use_id for r in message.tool_results]
    if len(ids) != len(set(ids)):
        raise DuplicateToolIdError("a tool call is answered twice in the same message")


def _check_compaction(block: WireBlock, index: int, role: Role, where: str) -> None:
    """The API's `compaction` block comes first in the reply it came in, once, sealed as the
    API returned it while it carries a summary (a `signature`, or `encrypted_content`):
    anywhere else, or with a bare summary, the API refuses it in every later request
    (build-with-claude/compaction)."""
    if role is not Role.ASSISTANT or index != 0:
        raise MisplacedBlockError(
            f"{where}: a compaction block is the first block of the model's reply it came in"
        )
    wire = block.to_wire()
    sealed = isinstance(wire.get("signature"), str) or isinstance(
        wire.get("encrypted_content"), str
    )
    if wire.get("content") is not None and not sealed:
        # On-demand compaction signs its block; threshold compaction seals the summary in
        # `encrypted_content`. A summary with neither is not one the API wrote.
        raise MalformedBlockError(
            f"{where}: a compaction block needs the signature (or encrypted_content) the API "
            "returned with it"
        )


def _check_system_blocks(message: Message) -> None:
    """A system message holds instructions (text) and tool changes, nothing else."""
    for index, block in enumerate(message.content):
        where = f"block {index}"
        if isinstance(block, TextBlock):
            _check_text(block.text, where)
        elif isinstance(block, WireBlock) and block.type in TOOL_CHANGE_TYPES:
            if not isinstance(block.to_wire().get("tool"), dict):
                raise MalformedBlockError(f"{where}: a {block.type} block needs its 'tool' object")
        else:
            kind = block.type if isinstance(block, WireBlock) else type(block).__name__
            raise MisplacedBlockError(
                f"{where}: a system message holds only text and tool_addition/tool_removal "
                f"blocks, not {kind}"
            )


def check_sequence(
    previous: Message | None, message: Message, ids_in_view: Callable[[], Container[str]]
) -> None:
    """Checks that `message` may follow `previous` in a valid request.

    `ids_in_view` gives the tool_use ids already in the context; it is called only for an
    assistant message, the one kind that brings new ids."""
    if message.role is Role.SYSTEM or (previous is not None and previous.role is Role.SYSTEM):
        check_system_placement(previous, message)
        if message.role is Role.ASSISTANT:
            # A reply after system messages answers the user turn before them.
            _check_new_tool_ids(message, ids_in_view)
        return
    if previous is None:
        if message.role is Role.ASSISTANT and leads_with_compaction(message):
            # The API's on-demand compaction: its block, sent back first in `messages` in
            # place of what it summarizes (build-with-claude/compaction-on-demand).
            _check_new_tool_ids(message, ids_in_view)
            return
        if message.role is not Role.USER:
            raise RoleOrderError(
                "a session must start with a user message (or the assistant message holding "
                "the API's compaction block)"
            )
        if message.tool_results:
            raise OrphanToolResultError(
                "the first message cannot hold tool results: no tool call came before it"
            )
        return
    if message.role is previous.role and not (
        message.role is Role.ASSISTANT and is_paused_turn(previous)
    ):
        # A reply after a paused one continues its turn; the API joins the two.
        if message == previous:
            raise MessageAlreadyAppendedError(
                f"two {message.role.value} messages in a row, the same twice: it is the "
                "session's last message already (a retry of a call that was saved?); nothing "
                "was appended again"
            )
        raise RoleOrderError(
            f"two {message.role.value} messages in a row: roles must alternate "
            "(put all the blocks of one turn in one message)"
        )
    if message.role is Role.USER:
        # Sets to look in, lists to name in order: a batch of thousands of parallel calls
        # took seconds looked up in lists.
        pending = [u.id for u in previous.tool_uses]
        answered = [r.tool_use_id for r in message.tool_results]
        pending_ids, answered_ids = set(pending), set(answered)
        orphans = [i for i in answered if i not in pending_ids]
        if orphans:
            raise OrphanToolResultError(
                f"tool_result for {', '.join(orphans)} answers no tool_use of the previous "
                "assistant message"
            )
        missing = [i for i in pending if i not in answered_ids]
        if missing:
            raise UnansweredToolUseError(
                f"tool_use {', '.join(missing)} of the previous assistant message has no "
                "tool_result here; all results of a batch go in the next user message"
            )
    else:
        _check_new_tool_ids(message, ids_in_view)


def check_next(
    message_at: MessageAt,
    count: int,
    message: Message,
    ids_in_view: Callable[[], Container[str]],
) -> None:
    """`check_sequence` and `check_appended` for `message` after the `count` messages
    `message_at` reads (one by one: a cold session reads the last body of its tail alone)."""
    check_sequence(message_at(count - 1) if count else None, message, ids_in_view)
    check_appended(message_at, count, message)


def _check_new_tool_ids(message: Message, ids_in_view: Callable[[], Container[str]]) -> None:
    seen = ids_in_view()
    reused = [u.id for u in message.tool_uses if u.id in seen]
    if reused:
        raise DuplicateToolIdError(
            f"tool_use id {', '.join(reused)} is already used in this session's context"
        )


def _check_result_content(block: ToolResultBlock, where: str) -> None:
    if isinstance(block.content, str):
        return
    for nested in block.content:
        if isinstance(nested, TextBlock):
            _check_text(nested.text, where)
        elif isinstance(nested, ImageBlock):
            check_image(nested, where)
        else:
            _check_wire(nested, where, role=None)


def _check_text(text: str, where: str) -> None:
    if not text.strip():
        raise EmptyContentError(f"{where}: text blocks must not be empty or only white space")


MAX_TOOL_ID_LENGTH = 256
"""The longest tool id accepted (the API's are about 30 characters); every later request
carries each id in view, so a huge one would weigh on all of them."""


def _check_tool_id(tool_id: str, where: str) -> None:
    if len(tool_id) > MAX_TOOL_ID_LENGTH:
        raise MalformedToolIdError(
            f"{where}: a tool id is at most {MAX_TOOL_ID_LENGTH} characters, got "
            f"{len(tool_id):,} ({tool_id[:20]!r}…)"
        )
    if not TOOL_ID_PATTERN.fullmatch(tool_id):
        raise MalformedToolIdError(f"{where}: tool id {tool_id!r:.80} must match ^[a-zA-Z0-9_-]+$")


CACHE_TTLS = frozenset({"5m", "1h"})


def check_cache_control(wire: Mapping[str, object], where: str) -> None:
    """A block's `cache_control`, kept with the block and sent with every later request,
    must be one the API accepts: `{"type": "ephemeral"}`, with an optional `ttl`."""
    if "cache_control" not in wire or wire["cache_control"] is None:
        return
    control = wire["cache_control"]
    if (
        not isinstance(control, dict)
        or control.get("type") != "ephemeral"
        or set(control) - {"type", "ttl"}
        or ("ttl" in control and control["ttl"] not in CACHE_TTLS)
    ):
        raise MalformedBlockError(
            f"{where}: cache_control must be {{'type': 'ephemeral'}} with an optional ttl of "
            f"'5m' or '1h', got {control!r:.80}"
        )


def _check_unique(uses: tuple[ToolUseBlock, ...]) -> None:
    ids = [u.id for u in uses]
    if len(ids) != len(set(ids)):
        raise DuplicateToolIdError("a tool_use id is repeated within one message")


# The blocks kept as JSON: documents, search results, server tools and their results.

_USER_SIDE = frozenset({"document", "search_result", "container_upload", "image"})


def _check_wire(block: WireBlock, where: str, *, role: Role | None) -> None:
    """Checks a block kept as JSON; `role` is `None` inside a tool_result's content."""
    wire = block.to_wire()
    check_cache_control(wire, where)
    if not block.known:
        return  # a type not known yet: passed on unchanged, for the API to judge
    kind = block.type
    if role is None:
        if kind not in _USER_SIDE - {"container_upload"} and kind not in NESTED_ONLY_TYPES:
            raise MisplacedBlockError(f"{where}: {kind} blocks cannot be inside a tool_result")
    elif kind in NESTED_ONLY_TYPES:
        raise MisplacedBlockError(f"{where}: {kind} blocks belong inside a tool_result's content")
    elif kind in _USER_SIDE and role is not Role.USER:
        raise MisplacedBlockError(f"{where}: {kind} blocks belong in user messages")
    elif (
        kind in SERVER_TOOL_USE_TYPES | SERVER_TOOL_RESULT_TYPES | UNMARKED_REPLY_TYPES
        and role is not Role.ASSISTANT
    ):
        raise MisplacedBlockError(f"{where}: {kind} blocks belong in assistant messages")
    if kind == "document":
        check_document(wire, where)
    elif kind == "search_result":
        content = wire.get("content")
        source = wire.get("source")
        if not isinstance(source, str) or not source.strip():
            raise MalformedBlockError(f"{where}: a search_result needs a non-blank source")
        if not isinstance(wire.get("title"), str):
            raise MalformedBlockError(f"{where}: a search_result needs a string title")
        if not isinstance(content, list) or not content:
            raise MalformedBlockError(f"{where}: a search_result needs a list of text blocks")
        for item in content:
            if not isinstance(item, dict) or item.get("type") != "text":
                raise MalformedBlockError(f"{where}: a search_result holds only text blocks")
            text = item.get("text")
            _check_text(text if isinstance(text, str) else "", where)
    elif kind == "container_upload":
        _require_str(wire, "file_id", kind, where)
    elif kind == "image":  # by Files API id (base64 and url images are `ImageBlock`s)
        source = wire.get("source")
        if not isinstance(source, dict) or not isinstance(source.get("file_id"), str):
            raise MalformedBlockError(f"{where}: an image by file needs its 'file_id'")
        if not source["file_id"]:
            raise MalformedBlockError(f"{where}: an image by file needs its 'file_id'")
    elif kind == "tool_reference":
        _require_str(wire, "tool_name", kind, where)
    elif kind in SERVER_TOOL_USE_TYPES:
        _check_tool_id(_require_str(wire, "id", kind, where), where)
        _require_str(wire, "name", kind, where)
        if not isinstance(wire.get("input", {}), dict):
            raise MalformedBlockError(f"{where}: a {kind} block's 'input' must be an object")
    elif kind in SERVER_TOOL_RESULT_TYPES:
        _check_tool_id(_require_str(wire, "tool_use_id", kind, where), where)
        if "content" not in wire:
            raise MalformedBlockError(f"{where}: a {kind} block needs its content")
    elif kind in UNMARKED_REPLY_TYPES:
        check_unmarked(wire, kind, where)


def _require_str(wire: dict[str, object], key: str, kind: str, where: str) -> str:
    """`wire[key]`, a string that is not blank (a name, an id, a URL of white space alone
    names nothing, and the API refuses it); `MalformedBlockError` otherwise."""
    value = wire.get(key)
    if not isinstance(value, str) or not value.strip():
        raise MalformedBlockError(f"{where}: a {kind} block needs a non-blank string {key!r}")
    return value


def check_counts(message: Message, tokens: int, block_tokens: Sequence[int], usage: bool) -> None:
    """Checks the counts recorded with `message`: one per block, none negative; only a model
    reply (an assistant message) carries `usage`."""
    if len(block_tokens) != len(message.content):
        raise ValueError("block_tokens needs one count per block")
    if tokens < 0 or any(t < 0 for t in block_tokens):
        raise ValueError("token counts cannot be negative")
    if usage and message.role is not Role.ASSISTANT:
        raise InvalidMessageError("only a model reply (assistant message) carries usage")


def check_reconfiguration(
    budget: int, fixed_tokens: int, has_tools: bool, retained: Iterable[Message]
) -> None:
    """Checks that a session may be reconfigured: the system prompt and tools alone
    (`fixed_tokens`, with the request overhead) fit the new `budget`, and tools stay defined
    while the `retained` messages hold tool calls or results."""
    if fixed_tokens >= budget:
        raise InvalidSettingsError(
            f"the system prompt and tools ({fixed_tokens} tokens) would not fit the budget of "
            f"{budget} tokens"
        )
    check_tools_defined(
        has_tools,
        retained,
        "the context still holds tool calls and results, and the Messages API needs tools "
        "defined for them: keep at least one tool until they are compacted",
    )


def check_tools_defined(has_tools: bool, messages: Iterable[Message], problem: str = "") -> None:
    """`InvalidMessageError` when `messages` hold tool calls or results (`tool_use`,
    `tool_result`) and the session defines no tools: the Messages API refuses every request
    holding them without `tools`. Server tools' calls and results need no tool of the host."""
    if not has_tools and any(m.tool_uses or m.tool_results for m in messages):
        raise InvalidMessageError(
            problem
            or "the session defines no tools, and the Messages API refuses tool_use and "
            "tool_result blocks in a request without tools: give the session its tools "
            "(start_session(tools=...) or reconfigure(tools=...)) first; nothing was written"
        )
