"""The shapes today's replies take that earlier ones did not.

Today's models write thinking blocks between tool calls, not only first in a reply: a
progress update right before each tool call it introduces, reasoning between server tool
calls, and, in a reply cut short, a progress update last (build-with-claude/thinking,
"Progress updates between tool calls", "Interleaved thinking").
"""

from __future__ import annotations

from collections.abc import Sequence

from abridged.domain.messages import (
    SERVER_TOOL_RESULT_TYPES,
    SERVER_TOOL_USE_TYPES,
    Block,
    RedactedThinkingBlock,
    ThinkingBlock,
    ToolUseBlock,
    WireBlock,
)


def thinking_between_calls(content: Sequence[Block], index: int) -> bool:
    """Whether the thinking block at `index`, after other blocks, is where today's models
    put one: in a run right before a tool call (a progress update, interleaved reasoning),
    right after a server tool's result (reasoning between server tool calls), or ending the
    message (a reply cut short), as build-with-claude/thinking describes."""

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
        or (isinstance(following, WireBlock) and following.type in SERVER_TOOL_USE_TYPES)
        or (isinstance(preceding, WireBlock) and preceding.type in SERVER_TOOL_RESULT_TYPES)
    )
