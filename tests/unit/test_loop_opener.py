"""`loop_opener`, the reply that opens the active tool loop (the API's rule for thinking),
read from the end only as far as the loop goes: the same answer as the definition, which
walks every message, on any sequence of prompts, calls, results and system messages."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from abridged.domain.messages import Message, Role, ToolResultBlock, ToolUseBlock
from abridged.domain.reply_shapes import loop_opener


def defined_opener(messages: Sequence[Message]) -> Message | None:
    """The definition: every message but the system ones, then back from the last."""
    kept = [m for m in messages if m.role is not Role.SYSTEM]
    if not kept or not kept[-1].tool_results:
        return None
    opener = None
    for message in reversed(kept):
        if message.role is Role.ASSISTANT:
            opener = message
        elif not message.tool_results:
            break
    return opener


def message(kind: str, k: int) -> Message:
    if kind == "prompt":
        return Message.user(f"prompt {k}")
    if kind == "call":
        return Message.assistant(ToolUseBlock(f"t{k}", "Bash", {"command": f"ls {k}"}))
    if kind == "results":
        return Message.user(ToolResultBlock(f"t{k - 1}", f"out {k}"))
    if kind == "text":
        return Message.assistant(f"answer {k}")
    return Message.system(f"reminder {k}")


KINDS = st.sampled_from(["prompt", "call", "results", "text", "system"])


@given(st.lists(KINDS, max_size=30))
def test_the_loop_opener_is_the_definitions(kinds: list[str]) -> None:
    messages = [message(kind, k) for k, kind in enumerate(kinds)]

    assert loop_opener(messages) is defined_opener(messages)


def test_a_loop_is_opened_by_the_first_reply_after_the_last_prompt() -> None:
    messages = [message(k, n) for n, k in enumerate(["prompt", "call", "results", "system"])]
    messages += [message("call", 4), message("results", 5)]

    assert loop_opener(messages) is messages[1]
    assert loop_opener([*messages, message("text", 6)]) is None
