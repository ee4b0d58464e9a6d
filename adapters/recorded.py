"""Recorded traffic made a valid conversation where the API takes what a session refuses.

A record of real traffic (a log, a trajectory, a part cut from a longer one) can start with
replies, or with results of calls made before it, and an agent that numbers its calls anew
sends a tool call id twice. `abridged.adapters.importers.normalize` starts such a record at
its first user prompt and renames the ids used again, noting each change;
`refused_as_recorded` tells whether abridged's own JSONL, otherwise read as it is, needs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeGuard

from abridged.domain.errors import InvalidMessageError, RoleOrderError
from abridged.domain.messages import JSON, Message, Role
from abridged.domain.reply_shapes import leads_with_compaction
from abridged.domain.validation import check_sequence

UNANSWERED = "[no result was recorded for this tool call]"
Records = list[tuple[int, str, list[JSON]]]
"""(line, role, blocks), as `normalize` reads them."""


def regrouped(raw: Records, notes: list[str]) -> Records:
    """`raw` with a reply's calls together again where a record wrote results between them:
    an agent that runs each call as it streams writes `call 1, call 2, result 1, call 3,
    result 2, ...`, and no reply comes while calls of the one before are unanswered. So a
    record of bare calls (no text, no thinking, no id the reply has already) that follows
    results goes on the reply while a call made since the last such record is unanswered;
    the results follow it. A call still unanswered when every call made after it has been
    (a result lost on the way) does not carry the reply on."""
    out: Records = []
    pending: dict[str, int] = {}  # the reply's unanswered calls, by the merge they came after
    called: set[str] = set()
    held: Records = []
    merges = fresh = 0  # fresh: the unanswered calls made since the last merge
    stray = False  # a held result answers no call of the reply
    moved = 0
    for record in raw:
        _, role, blocks = record
        if role == "assistant":
            ids = [str(b.get("id")) for b in blocks if _is_call(b)]
            going_on = (
                held
                and not stray
                and fresh > 0
                and _bare_calls(blocks)
                and not any(i in called for i in ids)
            )
            if going_on:
                moved += 1
                merges += 1
                fresh = 0
            else:
                out.extend(held)
                held, stray = [], False
                if not (out and out[-1][1] == "assistant"):
                    pending, called, fresh = {}, set(), 0
            for i in ids:
                pending[i] = merges
            fresh += len(ids)
            called.update(ids)
            out.append(record)
        elif role == "user" and called and blocks and all(is_result(b) for b in blocks):
            held.append(record)
            for block in blocks:
                answered = block.get("tool_use_id") if isinstance(block, Mapping) else None
                if not isinstance(answered, str) or answered not in pending:
                    stray = True
                elif pending.pop(answered) == merges:
                    fresh -= 1
        else:
            out.extend(held)
            held, stray, pending, called, fresh = [], False, {}, set(), 0
            out.append(record)
    out.extend(held)
    if moved:
        notes.append(
            f"{moved} records of tool calls written after results of their reply's earlier "
            "calls read as part of that reply, the results after it"
        )
    return out


def signed_thinking(raw: Records, models: Sequence[str], notes: list[str]) -> Records:
    """`raw` without its thinking blocks that hold no signature (`""`, or none), with one
    note that counts them and names `models`, those the record names. Claude signs its
    thinking, and the API takes thinking back only with that signature: a model of another
    maker behind a Messages-API-compatible endpoint (GLM, in Claude Code) writes it
    unsigned, and no Claude model would take the conversation with it. A record left with no
    block is left out, as a record written empty is."""
    out: Records = []
    dropped = 0
    for number, role, blocks in raw:
        kept = [b for b in blocks if not _unsigned_thinking(b)]
        dropped += len(blocks) - len(kept)
        if kept or not blocks:
            out.append((number, role, kept))
    if dropped:
        names = list(dict.fromkeys(models))
        named = f"model{'s' if len(names) > 1 else ''} {', '.join(names)}" if names else "no model"
        notes.append(
            f"{dropped} thinking blocks without a signature left out (the record names "
            f"{named}): the API takes thinking back only with the signature a Claude model "
            "gave it"
        )
    return out


def _unsigned_thinking(block: JSON) -> bool:
    if not isinstance(block, Mapping) or block.get("type") != "thinking":
        return False
    signature = block.get("signature")
    return not (isinstance(signature, str) and signature)


def _bare_calls(blocks: list[JSON]) -> bool:
    """Whether a record holds tool calls and nothing else (but blank text)."""
    return any(_is_call(b) for b in blocks) and all(_is_call(b) or blank_text(b) for b in blocks)


def blank_text(block: JSON) -> bool:
    """Whether `block` is a text block of only white space (which the API refuses)."""
    return (
        isinstance(block, Mapping)
        and block.get("type") == "text"
        and (not isinstance(block.get("text"), str) or not block["text"].strip())
    )


def located(number: int) -> str:
    """Where a note's message is: its line, or the document it is part of (a file that is
    one JSON object, such as a request body, whose messages share its position)."""
    return f"line {number}" if number else "the document"


def from_first_prompt(joined: Records, notes: list[str]) -> Records:
    """`joined` from its first user message that holds more than tool results: a record cut
    from a longer one can start with replies, or with results whose calls it does not hold."""
    start = next(
        (
            i
            for i, (_, role, blocks) in enumerate(joined)
            if role == "user" and not all(is_result(b) for b in blocks)
        ),
        len(joined),
    )
    skipped = joined[:start]
    if any(role == "assistant" for _, role, _ in skipped):
        notes.append("an assistant message before the first user message was skipped")
    results = sum(1 for _, role, _ in skipped if role == "user")
    if results:
        notes.append(
            f"{results} message(s) of tool results before the first user prompt skipped "
            "(their calls are before the record starts)"
        )
    return joined[start:]


def unique_call_ids(joined: Records, notes: list[str]) -> Records:
    """`joined` with a tool call id used again (recorded traffic has them: an agent that
    numbers its calls anew) renamed `<id>_2`, `_3`, ..., and the results of the user message
    after it that answer it: the API's ids are unique, and a session refuses one in view
    twice."""
    used: set[str] = set()
    suffixes: dict[str, int] = {}
    """The suffix to try next for an id: an id used N times is renamed in time linear in N."""
    renamed: dict[str, str] = {}
    out: Records = []
    for number, role, blocks in joined:
        if role == "assistant":
            renamed = {}
            fresh: list[JSON] = []
            for block in blocks:
                old = block.get("id") if _is_call(block) else None
                if not isinstance(old, str):
                    fresh.append(block)
                    continue
                new, suffix = old, suffixes.get(old, 2)
                while new in used:
                    new, suffix = f"{old}_{suffix}", suffix + 1
                suffixes[old] = suffix
                used.add(new)
                if new != old:
                    renamed[old] = new
                fresh.append({**block, "id": new} if new != old else block)
            if renamed:
                notes.append(
                    f"{located(number)}: tool_use id(s) used before renamed: "
                    + ", ".join(f"{o} -> {n}" for o, n in renamed.items())
                )
            out.append((number, role, fresh))
        elif role == "user" and renamed:
            out.append((number, role, [_answering(b, renamed) for b in blocks]))
            renamed = {}
        else:
            out.append((number, role, blocks))
    return out


def _is_call(block: JSON) -> TypeGuard[Mapping[str, JSON]]:
    return isinstance(block, Mapping) and block.get("type") == "tool_use"


def _answering(block: JSON, renamed: Mapping[str, str]) -> JSON:
    if is_result(block) and isinstance(block, Mapping):
        answered = block.get("tool_use_id")
        if isinstance(answered, str) and answered in renamed:
            return {**block, "tool_use_id": renamed[answered]}
    return block


def is_result(block: JSON) -> bool:
    """Whether `block` is a `tool_result` block (as JSON)."""
    return isinstance(block, Mapping) and block.get("type") == "tool_result"


def refused_as_recorded(messages: Sequence[Message]) -> bool:
    """Whether a session would refuse `messages` as they are where the API takes them: the
    first message out of place follows another of its role (or the first is a reply), or a
    tool call id is used again. Roles only: the whole check, sizes and blocks, is made once,
    later; a record whose first problem is another (a call left unanswered) is refused by it."""
    previous: Message | None = None
    for message in messages:
        try:
            check_sequence(previous, message, tuple)
        except RoleOrderError:
            return True
        except InvalidMessageError:
            return False
        previous = message
    calls = [u.id for m in messages for u in m.tool_uses]
    return len(set(calls)) != len(calls)


def is_reply(index: int, message: Message) -> bool:
    """Whether the transcript's message at `index` is a model reply, which a request comes
    before: an assistant message, but for a first one holding the API's compaction block (a
    history the client compacted with the API, sent back first in place of what it summarizes:
    build-with-claude/compaction-on-demand), which nothing came before."""
    return message.role is Role.ASSISTANT and not (index == 0 and leads_with_compaction(message))


def without_null_flags(item: JSON) -> tuple[JSON, int]:
    """`item` (a message or a block) without a tool result's `is_error: null`, which some
    SDKs write for an unset flag and the domain refuses, and how many it cleared."""
    if not isinstance(item, Mapping):
        return item, 0
    if item.get("type") == "tool_result" and "is_error" in item and item["is_error"] is None:
        return {k: v for k, v in item.items() if k != "is_error"}, 1
    content = item.get("content")
    if "role" not in item or not isinstance(content, list):
        return item, 0
    cleared = [without_null_flags(block) for block in content]
    count = sum(n for _, n in cleared)
    return ({**item, "content": [block for block, _ in cleared]}, count) if count else (item, 0)


def null_flags_note(count: int) -> list[str]:
    """The import's note for `count` flags `without_null_flags` cleared (none for none)."""
    if not count:
        return []
    return [f"{count} tool results' `is_error: null` read as not an error"]


def paired_results(
    blocks: list[JSON], calls: list[str], notes: list[str], number: int
) -> list[JSON]:
    """A user message's blocks with one `tool_result` for each of `calls` (the reply
    before's), in their order: results recorded twice joined, missing ones filled in as
    errors, results answering no call left out; each change noted."""
    results: dict[str, Mapping[str, JSON]] = {}
    again: dict[str, None] = {}
    for block in blocks:
        if not (is_result(block) and isinstance(block, Mapping)):
            continue
        recorded = block.get("tool_use_id")
        call_id = recorded if isinstance(recorded, str) else repr(recorded)
        if call_id not in results:
            results[call_id] = block
            continue
        results[call_id] = _both_results(results[call_id], block)
        again[call_id] = None
    if again:
        notes.append(
            f"{located(number)}: more than one result recorded for {', '.join(again)}; "
            "joined in one tool_result, in the order recorded"
        )
    # Looked up in a set: a reply streamed as thousands of entries makes as many calls,
    # and a look in the list for each result took seconds.
    called = set(calls)
    orphans = [i for i in results if i not in called]
    if orphans:
        notes.append(f"{located(number)}: results for {', '.join(orphans)} answer no call")
    answered = [results[i] for i in calls if i in results]
    missing = [i for i in calls if i not in results]
    if missing:
        notes.append(f"{located(number)}: calls {', '.join(missing)} had no recorded result")
    filled = [
        {"type": "tool_result", "tool_use_id": i, "content": UNANSWERED, "is_error": True}
        for i in missing
    ]
    others = [b for b in blocks if not is_result(b)]
    ordered = answered + filled
    by_call = {b["tool_use_id"]: b for b in ordered}
    return [by_call[i] for i in calls] + others


def _both_results(first: Mapping[str, JSON], second: Mapping[str, JSON]) -> Mapping[str, JSON]:
    """One `tool_result` holding both results recorded for a call: its content the first's
    then the second's, an error if either was."""
    contents = [first.get("content"), second.get("content")]
    content: JSON
    if all(isinstance(c, str) or c is None for c in contents):
        content = "\n\n".join(c for c in contents if isinstance(c, str) and c)
    else:
        content = _content_blocks(contents[0]) + _content_blocks(contents[1])
    joined = {**first, "content": content}
    if first.get("is_error") or second.get("is_error"):
        joined["is_error"] = True
    return joined


def _content_blocks(content: JSON) -> list[JSON]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []
