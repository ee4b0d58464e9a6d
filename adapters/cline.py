"""Cline's task histories (`api_conversation_history.json`, and those of the agents built on
Cline): a JSON list of Messages API messages, but each tool's result written as text in the
user message after the calls, where the API takes a `tool_result`:

- `[read_file for 'src/app.ts'] Result:` then the output, in one text block or as the next
  (`[name] Result:` for a tool with nothing to name; what follows `for` may take lines, the
  question an `ask_followup_question` asked);
- `Tool [list_files] was not executed because a tool has already been used in this
  message.` for a call Cline did not run.

`written_results` reads them as the calls' results, matched by the tool's name, where the
message answers every call so; anything else is left as the user's text."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from abridged.adapters.recorded import is_result
from abridged.domain.messages import JSON

WRITTEN_RESULT = re.compile(
    r"[ \t\n]*\[([A-Za-z0-9_-]{1,64})(?: for '[\s\S]*?')?\] Result:[ \t]*\n?"
)
"""A result's header: the tool's name, what it was given in quotes, `Result:`."""
NOT_EXECUTED = re.compile(r"[ \t\n]*Tool \[([A-Za-z0-9_-]{1,64})\] was not executed because")
"""What Cline writes for a call it did not run."""
_NOT_AN_OUTPUT = ("<environment_details>", "# task_progress", "# TODO LIST")
"""How the texts Cline adds after the results start: not a result's output."""


def written_results(blocks: list[JSON], calls: Sequence[tuple[str, str]]) -> tuple[list[JSON], int]:
    """`blocks` (a user message after a reply making `calls`, each its id and tool name) with
    the results written as text read as the calls' `tool_result`s, in the calls' order, and
    how many: only where the message holds no `tool_result` and each call, and nothing else,
    has such a text under its tool's name."""
    if not calls or any(is_result(b) for b in blocks):
        return blocks, 0
    written = _written(blocks)
    if len(written) != len(calls):
        return blocks, 0
    results: list[JSON] = []
    used: set[int] = set()
    for call_id, name in calls:
        found = next(
            (k for k, w in enumerate(written) if k not in used and _names(w[0], name)), None
        )
        if found is None:
            return blocks, 0
        used.add(found)
        _, output, refused, _ = written[found]
        result: dict[str, JSON] = {"type": "tool_result", "tool_use_id": call_id, "content": output}
        if refused:
            result["is_error"] = True
        results.append(result)
    taken = {i for w in written for i in w[3]}
    return results + [b for i, b in enumerate(blocks) if i not in taken], len(results)


def _written(blocks: list[JSON]) -> list[tuple[str, str, bool, tuple[int, ...]]]:
    """Each result written as text: the tool's name, its output, whether the call was not
    run, and the blocks it takes (its header's, and the next when that holds the output)."""
    found: list[tuple[str, str, bool, tuple[int, ...]]] = []
    index = 0
    while index < len(blocks):
        text = _text(blocks[index]) or ""
        taken: tuple[int, ...] = (index,)
        if (refused := NOT_EXECUTED.match(text)) is not None:
            found.append((refused.group(1), text, True, taken))
        elif (header := WRITTEN_RESULT.match(text)) is not None:
            output = text[header.end() :]
            following = _text(blocks[index + 1]) if index + 1 < len(blocks) else None
            if not output.strip() and following is not None and _an_output(following):
                output, taken = following, (index, index + 1)
            found.append((header.group(1), output, False, taken))
        index += len(taken)
    return found


def _text(block: JSON) -> str | None:
    if isinstance(block, Mapping) and block.get("type") == "text":
        text = block.get("text")
        return text if isinstance(text, str) else None
    return None


def _an_output(text: str) -> bool:
    """Whether a text after an empty header is its output (not another result, not what
    Cline adds after the results)."""
    return (
        WRITTEN_RESULT.match(text) is None
        and NOT_EXECUTED.match(text) is None
        and not text.lstrip().startswith(_NOT_AN_OUTPUT)
    )


def _names(written: str, called: str) -> bool:
    """Whether a result written under `written` is one of a call of the tool `called`
    (Cline writes some under a shorter name: `[subagents]` for `use_subagents`)."""
    return written == called or called.endswith(f"_{written}")
