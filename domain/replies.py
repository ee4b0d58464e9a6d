"""Model replies that are paid for but incomplete: how they are kept, and how they are shown.

The provider may return a reply no request may carry as it is: one cut at `max_tokens` in the
middle of its thinking (it ends with a thinking block, perhaps without a signature), or an
empty one. Such a reply is still recorded whole, as the provider returned it; only the view
adapts: empty text blocks and trailing thinking blocks are left out of later requests, and a
reply with nothing left is shown as a short note, so the roles keep alternating.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from abridged.domain.messages import Message, RedactedThinkingBlock, Role, TextBlock, ThinkingBlock
from abridged.domain.truncation import Truncation

EMPTY_REPLY_TEXT = "[no reply: the model stopped before writing anything]"
"""What later requests show in place of a reply that has nothing a request may carry."""

EMPTY_REPLY_TOKENS = 24
"""What `EMPTY_REPLY_TEXT` costs as a block, on the safe side of any counter's count."""


def hidden_blocks(message: Message) -> frozenset[int]:
    """The indexes of the blocks of a model reply that requests leave out: empty text blocks,
    and thinking blocks at its end (nothing but a request's last block may end in thinking, and
    a cut one has no signature)."""
    if message.role is not Role.ASSISTANT:
        return frozenset()
    hidden = {
        index
        for index, block in enumerate(message.content)
        if isinstance(block, TextBlock) and not block.text.strip()
    }
    for index in range(len(message.content) - 1, -1, -1):
        block = message.content[index]
        if index in hidden:
            continue
        if not isinstance(block, ThinkingBlock | RedactedThinkingBlock):
            break
        hidden.add(index)
    return frozenset(hidden)


def is_incomplete(message: Message) -> bool:
    """Whether requests show the reply differently from how it is stored."""
    return message.role is Role.ASSISTANT and (not message.content or bool(hidden_blocks(message)))


def shown_reply(message: Message) -> Message:
    """The reply as later requests show it (see the module docstring)."""
    if not is_incomplete(message):
        return message
    hidden = hidden_blocks(message)
    kept = tuple(b for i, b in enumerate(message.content) if i not in hidden)
    return attrs.evolve(message, content=kept or (TextBlock(EMPTY_REPLY_TEXT),))


def extra_tokens(message: Message) -> int:
    """Tokens the view adds to the reply's own blocks: the note of an emptied reply."""
    return (
        EMPTY_REPLY_TOKENS
        if is_incomplete(message) and len(hidden_blocks(message)) == len(message.content)
        else 0
    )


def thinking_after_changes(message: Message, truncations: Sequence[Truncation]) -> frozenset[int]:
    """The thinking blocks of a reply that come after a block requests show changed (cut to
    head and tail, or a blank text block left out): each is bound to everything before it as
    the model wrote it, which a model that checks (preserved thinking) refuses, and a model
    that does not needs no thinking of a reply but what leads it. They leave the view, and
    count nothing (`abridged.domain.context.Entry`); the thinking before the first change
    stays."""
    if message.role is not Role.ASSISTANT:
        return frozenset()
    content = message.content
    changed = [t.block_index for t in truncations if not _thinking(content[t.block_index])]
    changed += [i for i in hidden_blocks(message) if isinstance(content[i], TextBlock)]
    if not changed:
        return frozenset()
    return frozenset(i for i in range(min(changed) + 1, len(content)) if _thinking(content[i]))


def _thinking(block: object) -> bool:
    return isinstance(block, ThinkingBlock | RedactedThinkingBlock)
