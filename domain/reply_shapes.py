"""The shapes today's replies take that earlier ones did not: tool calls the provider runs,
across the replies of one turn, and where thinking sits.

A server tool's result normally follows its call in the same assistant message. Two cases
spread one over several messages (agents-and-tools/tool-use/server-tools, build-with-claude/
handling-stop-reasons):

- a call made beside client tool calls (`stop_reason: "tool_use"`) runs when their results
  come back, in a user message that holds only those results (anything after them ends the
  turn, and the API refuses the call left unrun); the next reply starts with its result;
- a paused turn (`stop_reason: "pause_turn"`) may end in a call not run yet; the request
  that continues it ends with it, sent as it is, and the reply to that request (which the
  API joins to the paused one) starts with the results of the calls it ran.

And today's models write thinking blocks between tool calls, not only first in a reply: a
progress update right before each tool call it introduces, reasoning between server tool
calls, and, in a reply cut short, a progress update last (build-with-claude/thinking,
"Progress updates between tool calls", "Interleaved thinking").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TypeVar

from abridged.domain.errors import (
    DuplicateToolIdError,
    MalformedBlockError,
    MisplacedBlockError,
    OrphanToolResultError,
    UnansweredToolUseError,
)
from abridged.domain.messages import (
    SERVER_TOOL_RESULT_TYPES,
    SERVER_TOOL_USE_TYPES,
    Block,
    Message,
    RedactedThinkingBlock,
    Role,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireBlock,
)

_SERVER_TYPES = SERVER_TOOL_USE_TYPES | SERVER_TOOL_RESULT_TYPES


class _HasMessage(Protocol):
    @property
    def message(self) -> Message: ...


_E = TypeVar("_E", bound=_HasMessage)


def carried_span(retained: Sequence[_E]) -> list[_E]:
    """The last of `retained` back to the reply that made the server calls a reply appended
    after them answers (`results_carried`): the messages sent with it."""
    span: list[_E] = []
    for k in range(len(retained) - 1, -1, -1):
        span.append(retained[k])
        message = retained[k].message
        if message.role is Role.ASSISTANT and not results_carried(message):
            break
        if message.is_user_prompt:
            break
    return span


def _server_tool_ids(message: Message) -> tuple[list[str], set[str], tuple[str, ...]]:
    """The server tool calls of `message` in order, the ids answered after their call, and
    those answered with no call before them in it."""
    calls: list[str] = []
    answered: set[str] = set()
    carried: list[str] = []
    for block in message.content:
        if not isinstance(block, WireBlock) or block.type not in _SERVER_TYPES:
            continue
        wire = block.to_wire()
        if block.type in SERVER_TOOL_USE_TYPES:
            calls.append(str(wire.get("id")))
        else:
            tool_use_id = str(wire.get("tool_use_id"))
            if tool_use_id in calls:
                answered.add(tool_use_id)
            else:
                carried.append(tool_use_id)
    return calls, answered, tuple(carried)


def calls_waiting(message: Message) -> tuple[str, ...]:
    """The ids of an assistant message's server tool calls with no result after them in it:
    they run at the start of the next request, their results leading the next reply."""
    calls, answered, _ = _server_tool_ids(message)
    return tuple(i for i in calls if i not in answered)


def results_carried(message: Message) -> tuple[str, ...]:
    """The ids this message's server tool results answer that no call earlier in it made:
    the results of calls an earlier reply of the turn made, which lead this one."""
    return _server_tool_ids(message)[2]


def is_paused_turn(message: Message) -> bool:
    """Whether `message` is a reply that may have stopped with `pause_turn`: an assistant
    message ending in a server tool's call or result. The request that continues it ends
    with it, and the reply that follows continues the same turn."""
    if message.role is not Role.ASSISTANT or not message.content:
        return False
    last = message.content[-1]
    return isinstance(last, WireBlock) and last.type in _SERVER_TYPES


def check_server_tool_pairs(message: Message) -> None:
    """A server tool call is made once and answered once; across messages, see
    `check_server_turn`."""
    calls: set[str] = set()
    answered: set[str] = set()
    for index, block in enumerate(message.content):
        if not isinstance(block, WireBlock) or block.type not in _SERVER_TYPES:
            continue
        wire = block.to_wire()
        if block.type in SERVER_TOOL_USE_TYPES:
            if wire["id"] in calls or wire["id"] in answered:
                raise DuplicateToolIdError(f"block {index}: server tool id {wire['id']!r} repeated")
            calls.add(wire["id"])
        else:
            tool_use_id = wire["tool_use_id"]
            if tool_use_id in answered:
                raise DuplicateToolIdError(
                    f"block {index}: server tool call {tool_use_id} answered twice"
                )
            answered.add(tool_use_id)


def pending_after(
    last: Message | None, before_last: Callable[[], Message | None]
) -> tuple[str, ...]:
    """The server tool calls not run yet after the last user or assistant message `last`
    (`before_last` gives the one before, read only when needed): those of a paused reply
    that is last, or of the reply the last message's tool results answer."""
    if last is None:
        return ()
    if last.role is Role.ASSISTANT:
        return calls_waiting(last)
    if last.tool_results:
        earlier = before_last()
        if earlier is not None and earlier.role is Role.ASSISTANT:
            return calls_waiting(earlier)
    return ()


def check_server_turn(
    last: Message | None, before_last: Callable[[], Message | None], message: Message
) -> None:
    """Checks `message` after `last` (as for `pending_after`) against the server tool calls
    not run yet: the user message after calls made beside client calls holds only their
    results, a paused turn goes on with the model's reply, and a reply that holds results of
    an earlier reply's calls answers calls that were waiting. (A reply that leaves out such a
    result is not looked for: it would read an older message at every reply; the API writes
    the result first.)"""
    if message.role is Role.SYSTEM:
        return
    if message.role is Role.ASSISTANT:
        carried = results_carried(message)
        paused = last is not None and last.role is Role.ASSISTANT
        if not carried and not paused:
            return
        pending = pending_after(last, before_last)
        orphans = [i for i in carried if i not in pending]
        if orphans:
            raise OrphanToolResultError(
                f"a server tool result for {', '.join(orphans)} answers no server tool call "
                "earlier in this message, nor one the turn's previous reply left to run"
            )
        missing = [i for i in pending if i not in carried]
        if missing:
            raise UnansweredToolUseError(
                f"server tool call {', '.join(missing)} ran at the start of this request: the "
                "reply starts with its result"
            )
        return
    if last is None or last.role is not Role.ASSISTANT:
        return
    pending = calls_waiting(last)
    if not pending:
        return
    if not last.tool_uses:
        raise UnansweredToolUseError(
            f"server tool call {', '.join(pending)} of the paused reply has not run: the turn "
            "goes on with the model's next reply (send the request, which ends with the paused "
            "reply), not with a user message"
        )
    if any(not isinstance(block, ToolResultBlock) for block in message.content):
        raise MisplacedBlockError(
            f"server tool call {', '.join(pending)} runs when the client tools' results come "
            "back: this user message may hold only those tool_result blocks (anything more "
            "ends the turn and the API refuses the call left unrun); send the rest after the "
            "next reply"
        )


MessageAt = Callable[[int], Message]
"""A session's message at an index of its tail."""


def spoken_before(message_at: MessageAt, end: int) -> tuple[Message, int] | None:
    """The last user or assistant message before index `end` and its index (system messages
    passed over), read one by one: a cold session reads the last body of its tail alone."""
    k = end - 1
    while k >= 0 and message_at(k).is_system:
        k -= 1
    return (message_at(k), k) if k >= 0 else None


def _earlier(message_at: MessageAt, found: tuple[Message, int] | None) -> Message | None:
    before = spoken_before(message_at, found[1]) if found is not None else None
    return before[0] if before is not None else None


def pending_at_end(message_at: MessageAt, count: int) -> tuple[str, ...]:
    """`pending_after` the last of `count` messages."""
    found = spoken_before(message_at, count)
    return pending_after(found and found[0], lambda: _earlier(message_at, found))


def check_appended(message_at: MessageAt, count: int, message: Message) -> None:
    """`check_server_turn` for `message` appended after `count` messages."""
    found = spoken_before(message_at, count)
    check_server_turn(found and found[0], lambda: _earlier(message_at, found), message)


def takes_more_content(messages: Sequence[Message], at: int) -> bool:
    """Whether content may be added at the end of `messages[at]`: a user message, and not the
    tool results of a reply that also called a server tool not run yet."""
    if messages[at].role is not Role.USER:
        return False
    k = at - 1
    while k >= 0 and messages[k].role is Role.SYSTEM:
        k -= 1
    return not pending_after(messages[at], lambda: messages[k] if k >= 0 else None)


def thinking_between_calls(content: Sequence[Block], index: int) -> bool:
    """Whether the thinking block at `index`, after other blocks, is where today's models
    put one: in a run right before a tool call (a progress update, interleaved reasoning),
    right after a server tool's result (reasoning between server tool calls), or ending the
    message (a reply cut short), as build-with-claude/thinking describes; or on either side
    of a `fallback` block, where one model's thinking ends and the next model's starts
    (build-with-claude/refusals-and-fallback)."""

    def thinking(k: int) -> bool:
        return isinstance(content[k], ThinkingBlock | RedactedThinkingBlock)

    after = index
    while after < len(content) and thinking(after):
        after += 1
    before = index
    while before >= 0 and thinking(before):
        before -= 1
    following = content[after] if after < len(content) else None
    preceding = content[before] if before >= 0 else None
    return (
        following is None
        or isinstance(following, ToolUseBlock)
        or (isinstance(following, WireBlock) and following.type in _BEFORE_THINKING_ENDS)
        or (isinstance(preceding, WireBlock) and preceding.type in _AFTER_THINKING_STARTS)
    )


_BEFORE_THINKING_ENDS = SERVER_TOOL_USE_TYPES | {"fallback"}
_AFTER_THINKING_STARTS = SERVER_TOOL_RESULT_TYPES | {"fallback"}


def check_unmarked(wire: Mapping[str, object], kind: str, where: str) -> None:
    """A `fallback` names the model on each side of its hop; an `mcp_tool_listing` its MCP
    server and the tools it listed (the SDK's `BetaFallbackBlockParam`,
    `BetaMCPToolListingBlockParam`)."""
    if kind == "fallback":
        for hop in ("from", "to"):
            side = wire.get(hop)
            if not isinstance(side, Mapping) or not isinstance(side.get("model"), str):
                raise MalformedBlockError(f"{where}: a fallback block needs {hop!r} and its model")
        return
    server = wire.get("mcp_server_name")
    if not isinstance(server, str) or not server.strip() or not isinstance(wire.get("tools"), list):
        raise MalformedBlockError(
            f"{where}: an mcp_tool_listing needs its mcp_server_name and list of tools"
        )


def loop_opener(messages: Sequence[Message]) -> Message | None:
    """The assistant message that opens the active tool loop (the first reply after the last
    plain user prompt), or `None` when the messages do not end in tool results. System
    messages are passed over: they sit between turns, not inside a loop."""
    # Read from the end only as far as the loop goes: a request of a long session holds
    # thousands of messages, and copying them all took a millisecond a request.
    earlier = (m for m in reversed(messages) if m.role is not Role.SYSTEM)
    last = next(earlier, None)
    if last is None or not last.tool_results:
        return None
    opener = None
    for message in earlier:
        if message.role is Role.ASSISTANT:
            opener = message
        elif not message.tool_results:
            break
    return opener


def leads_with_compaction(message: Message) -> bool:
    """Whether `message` is a model reply that starts with the API's `compaction` block
    (threshold compaction, `compact_20260112`): the API drops everything before it."""
    first = message.content[0] if message.content else None
    return isinstance(first, WireBlock) and first.type == "compaction"


def lead_with_compaction(messages: list[Message], block: str) -> bool:
    """Puts the API's signed compaction block first, in the assistant message it came in;
    the kept turns follow it verbatim. Kept turns that start with a reply (the cut fell inside
    a turn) have the block lead that reply: the API would join the two assistant messages into
    that one, as its own replies lead with a block. Whether a message was added."""
    lead = WireBlock("compaction", block)
    if messages[0].role is Role.ASSISTANT:
        messages[0] = Message(Role.ASSISTANT, (lead, *messages[0].content))
        return False
    messages.insert(0, Message(Role.ASSISTANT, (lead,)))
    return True


def compaction_summary(block: object) -> str | None:
    """The summary text of the API's `compaction` block (its `content`); `None` for any other
    block, or one whose summary is encrypted only."""
    if not isinstance(block, WireBlock) or block.type != "compaction":
        return None
    content = block.to_wire().get("content")
    return content if isinstance(content, str) and content.strip() else None
