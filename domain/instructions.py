"""System prompts given mid-conversation, and which of them a compaction stops showing.

For a model that takes `role: "system"` messages, a new system prompt is given as a system
message (`instruction_message`) rather than by rewriting the top of the prompt, which would
invalidate the cache and every thinking block bound to it. Each such message states the whole
prompt in effect from there on, so the latest replaces every earlier one. A compaction carries
the system messages of the range it summarizes (never summarized away), and would otherwise
carry every earlier prompt too: a host that changes its prompt at each turn (a date, a memory
section) would fill the window with prompts nobody follows. A compaction changes the prefix
anyway, so it stops showing those a later one replaces (`superseded_instructions`); the host's
other system messages stay carried.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from abridged.domain.messages import Message, TextBlock

INSTRUCTION_PREAMBLE = (
    "The system prompt changes here. From now on, follow these instructions instead of "
    "the system prompt at the start of the conversation:\n\n"
)


def instruction_message(system: str) -> Message:
    """The system message that stands for a new system prompt mid-conversation."""
    return Message.system(INSTRUCTION_PREAMBLE + system)


def is_instruction(message: Message) -> bool:
    """Whether `message` is a system prompt given mid-conversation (`instruction_message`)."""
    if not message.is_system or len(message.content) != 1:
        return False
    block = message.content[0]
    return isinstance(block, TextBlock) and block.text.startswith(INSTRUCTION_PREAMBLE)


class Positioned(Protocol):
    @property
    def position(self) -> int: ...

    @property
    def message(self) -> Message: ...


def superseded_instructions(carried: Sequence[Positioned]) -> tuple[int, ...]:
    """The positions of the system prompts among `carried` (in order) that a later one
    replaces: every one but the last."""
    return tuple(e.position for e in carried if is_instruction(e.message))[:-1]
