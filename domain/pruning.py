"""Pruning old tool outputs and downgrading old reasoning: what to change, decided purely.

Both change how old blocks are *shown*, never what is stored. Both are batched: the prune
boundary moves only when the move saves enough (or the context is past its threshold), and
reasoning is downgraded only at those moments or at a compaction, so the request prefix stays
byte-stable for prompt caching between moves.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

import attrs

from abridged.domain.messages import (
    Message,
    RedactedThinkingBlock,
    Role,
    ThinkingBlock,
    ToolResultBlock,
)
from abridged.domain.salience import salient_lines
from abridged.domain.settings import CompactionSettings, Limits
from abridged.domain.tokens import TOOL_OVERHEAD, CountedEntry
from abridged.domain.truncation import remembered

PRUNE_MARKER = "…truncated {cut:,} bytes…"
NAME_ONLY_TOKENS = 40
SUMMARIZED_OUTPUT_TOKENS = 200
REASONING_SUMMARY_CHARS = 240


@attrs.frozen
class PrunedOutput:
    """One tool output shown pruned from now on."""

    position: int
    block_index: int
    tool_use_id: str
    tool_name: str
    policy: str
    """`prune` (shown by the strategy) or `summarize` (shown as a summary of the output)."""
    text: str
    tokens_before: int
    tokens_after: int


@attrs.frozen
class DowngradedThinking:
    """One thinking block dropped from requests, or shown as plain text."""

    position: int
    block_index: int
    action: str
    """`dropped` or `summarized`."""
    text: str | None
    tokens_before: int
    tokens_after: int


class EntryView(CountedEntry, Protocol):
    """What the planners read of a retained message (a session's `Entry` is one)."""

    @property
    def replaced_blocks(self) -> frozenset[int]: ...


@remembered
def head_tail(
    text: str, head_bytes: int, tail_bytes: int, salient_chars: int = 0, rules: int = 1
) -> str:
    """The first and last bytes of `text` with a marker saying how many were cut; with
    `salient_chars`, the marker keeps up to that many characters of the cut middle's salient
    lines, chosen by `rules` (`abridged.domain.salience`; remembered for large texts, as a
    truncation is: `abridged.domain.truncation.remembered`)."""
    data = text.encode("utf-8")
    marker_room = len(PRUNE_MARKER.format(cut=len(data))) + 2
    if len(data) <= head_bytes + tail_bytes + marker_room:
        return text
    head = data[:head_bytes].decode("utf-8", errors="ignore")
    tail = data[len(data) - tail_bytes :].decode("utf-8", errors="ignore") if tail_bytes else ""
    cut = len(data) - len(head.encode()) - len(tail.encode())
    middle = salient_lines(text[len(head) : len(text) - len(tail)], salient_chars, rules)
    if middle:
        kept = "\n".join(
            [f"…truncated {cut:,} bytes; {len(middle)} salient line(s) of them kept:…", *middle]
        )
        return f"{head}\n{kept}\n…end of the salient lines…\n{tail}"
    return f"{head}\n{PRUNE_MARKER.format(cut=cut)}\n{tail}"


def name_only(tool_name: str, tokens: int, is_error: bool) -> str:
    outcome = "an error" if is_error else "output"
    return (
        f"[{outcome} of {tool_name} pruned from the context to save space: "
        f"{tokens:,} tokens; the call and its input are kept above]"
    )


def protected_from(entries: Sequence[EntryView], protect_tokens: int) -> int:
    """Index of the first entry whose tool outputs are protected: the most recent outputs up
    to `protect_tokens`, and always the last exchange."""
    total = 0
    index = len(entries)
    for k in range(len(entries) - 1, -1, -1):
        outputs = sum(
            entries[k].block_tokens[i]
            for i, b in enumerate(entries[k].message.content)
            if isinstance(b, ToolResultBlock)
        )
        if total + outputs > protect_tokens and index < len(entries):
            break
        total += outputs
        index = k
    last_exchange = len(entries) - 2 if len(entries) >= 2 else 0
    return min(index, max(last_exchange, 0))


def pruned_output(
    settings: CompactionSettings, tool_name: str, block: ToolResultBlock, before: int
) -> tuple[str, str, int] | None:
    """How one tool output would be shown pruned (policy, text, tokens), or `None` when
    pruning it would save nothing. The text of a `summarize` policy is left for the service."""
    policy = settings.tool_policy(tool_name)
    if policy == "keep":
        return None
    if policy == "summarize":
        text, after = "", SUMMARIZED_OUTPUT_TOKENS
    elif settings.prune_strategy == "name-only":
        text = name_only(tool_name, before - TOOL_OVERHEAD, block.is_error)
        after = NAME_ONLY_TOKENS
    else:
        text = head_tail(
            block.text,
            settings.prune_head_bytes,
            settings.prune_tail_bytes,
            settings.prune_salient_chars,
            settings.salient_rules,
        )
        after = TOOL_OVERHEAD + len(text.encode()) // 3 + 1
    if after >= before or (policy == "prune" and text == block.text):
        return None
    return policy, text, after


def prunable_tokens(
    entry: EntryView, previous: Message | None, settings: CompactionSettings
) -> int:
    """What pruning `entry`'s tool outputs not yet replaced would save now; 0 for the first
    retained message, whose calls (and so tool names) are out of view."""
    if previous is None or entry.message.role is not Role.USER:
        return 0
    names = {u.id: u.name for u in previous.tool_uses}
    saving = 0
    replaced = entry.replaced_blocks
    for index, block in enumerate(entry.message.content):
        if not isinstance(block, ToolResultBlock) or index in replaced:
            continue
        before = entry.block_tokens[index]
        name = names.get(block.tool_use_id, "a tool")
        shown_pruned = pruned_output(settings, name, block, before)
        if shown_pruned is not None:
            saving += before - shown_pruned[2]
    return saving


def output_tokens(entry: EntryView) -> int:
    """Tokens of `entry`'s tool outputs as requests show them."""
    return sum(
        entry.block_tokens[i]
        for i, b in enumerate(entry.message.content)
        if isinstance(b, ToolResultBlock)
    )


PAST_THRESHOLD = "past the compaction threshold"
"""The reason of a prune that makes a request fit when no compaction can run."""
WITH_COMPACTION = "with a compaction"
"""The reason of a prune made in the same preparation as a compaction: the cached prefix
moves once for both."""
TO_FIT = "to fit: every output before the last exchange shown by name"
"""The reason of the last resort when no request fits otherwise (`plan_fit`)."""


@attrs.frozen
class PrunePlan:
    """A move of the prune boundary: the outputs it prunes and the texts they will show.

    Outputs with the `summarize` policy have an empty `text` for the service to fill."""

    boundary: int
    outputs: tuple[PrunedOutput, ...]
    reason: str
    min_saving: int = 0
    """What the outputs, counted exactly, must save for the move to be worth it (0 when the
    move is due whatever it saves: past the threshold, or `keep_none`)."""


def tool_results(
    entries: Sequence[EntryView], start: int, stop: int, *, replaced: bool = False
) -> Iterator[tuple[EntryView, int, ToolResultBlock, str]]:
    """The tool results in `entries[start:stop]` (`start` ≥ 1), each with its entry, its block
    index and the name of the tool it answers (from the assistant message just before it);
    those already shown otherwise only with `replaced`."""
    for k in range(start, stop):
        entry = entries[k]
        if entry.message.role is Role.ASSISTANT:
            continue
        names = {u.id: u.name for u in entries[k - 1].message.tool_uses}
        skipped = frozenset() if replaced else entry.replaced_blocks
        for index, block in enumerate(entry.message.content):
            if isinstance(block, ToolResultBlock) and index not in skipped:
                yield entry, index, block, names.get(block.tool_use_id, "a tool")


def plan_pruning(
    entries: Sequence[EntryView],
    boundary: int,
    limits: Limits,
    *,
    past_threshold: bool,
    protect_index: int | None = None,
    with_compaction: bool = False,
) -> PrunePlan | None:
    """Where to move the prune boundary now, or `None` to leave it.

    `protect_index` is `protected_from(entries, ...)` when the caller knows it already.
    `with_compaction`: a compaction has just moved the cached prefix, so every output
    outside the protected window is pruned whatever it saves (as past the threshold)."""
    settings = limits.settings
    mode = settings.tool_output_mode
    past_threshold = past_threshold or with_compaction
    if mode == "keep_all" and not past_threshold:
        return None
    if protect_index is None:
        protect_index = protected_from(entries, limits.prune_protect_tokens)
    if protect_index <= 0:
        return None
    new_boundary = entries[protect_index].position
    if new_boundary <= boundary:
        return None
    outputs: list[PrunedOutput] = []
    saving = 0
    # Outputs before the boundary are pruned already: start there. A result answers the
    # assistant message just before it, so that message names the tools.
    start = max(1, boundary - entries[0].position)
    for entry, index, block, name in tool_results(entries, start, protect_index):
        before = entry.block_tokens[index]
        shown_pruned = pruned_output(settings, name, block, before)
        if shown_pruned is None:
            continue
        policy, text, after = shown_pruned
        saving += before - after
        outputs.append(
            PrunedOutput(
                entry.position, index, block.tool_use_id, name, policy, text, before, after
            )
        )
    if not outputs:
        return None
    if mode == "keep_none":
        reason = "keep_none: every output outside the protected window"
    elif with_compaction:
        reason = WITH_COMPACTION
    elif past_threshold:
        reason = PAST_THRESHOLD
    elif saving >= limits.prune_min_tokens:
        reason = f"about {saving:,} tokens of old tool output"
        return PrunePlan(new_boundary, tuple(outputs), reason, limits.prune_min_tokens)
    else:
        return None
    return PrunePlan(new_boundary, tuple(outputs), reason)


def plan_fit(entries: Sequence[EntryView], boundary: int, limits: Limits) -> PrunePlan | None:
    """The last resort when no request fits: every tool output before the last exchange,
    those pruned already included, shown by its tool's name and size only, whatever it saves
    and whatever the protected window; outputs whose tool's policy is `keep` stay, and with
    `spare_small_outputs` those under twice a name's tokens (their name would save less than
    it costs: the loop's recent steps no longer shown whole). `None` when that would change
    nothing.

    A long tool loop can leave no place to cut (a loop led by thinking must keep its first
    message), and with the facts ledger and the summaries beside it, even its pruned outputs
    may not fit a small window: sending the loop with its older outputs by name is better
    than sending nothing."""
    settings = limits.settings
    last_exchange = len(entries) - 2
    outputs: list[PrunedOutput] = []
    for entry, index, block, name in tool_results(entries, 1, last_exchange, replaced=True):
        before = entry.block_tokens[index]
        small = before < 2 * NAME_ONLY_TOKENS if settings.spare_small_outputs else False
        if settings.tool_policy(name) == "keep" or before <= NAME_ONLY_TOKENS or small:
            continue
        text = name_only(name, before - TOOL_OVERHEAD, block.is_error)
        outputs.append(
            PrunedOutput(
                entry.position,
                index,
                block.tool_use_id,
                name,
                "prune",
                text,
                before,
                NAME_ONLY_TOKENS,
            )
        )
    if not outputs:
        return None
    return PrunePlan(max(boundary, entries[last_exchange].position), tuple(outputs), TO_FIT)


def plan_reasoning(entries: Sequence[EntryView], limits: Limits) -> tuple[DowngradedThinking, ...]:
    """Thinking blocks older than the protected turns, with what each becomes.

    The turns kept are never fewer than one, so the assistant message that opened an active
    tool loop keeps its thinking (the API requires it when thinking is on)."""
    settings = limits.settings
    prompts = [
        k
        for k, e in enumerate(entries)
        if e.message.role is Role.USER and not e.message.tool_results
    ]
    keep_turns = max(1, settings.reasoning_keep_turns)
    if len(prompts) < keep_turns:
        return ()
    return downgrades_of(entries[: prompts[-keep_turns]], settings)


def downgrades_of(
    entries: Sequence[EntryView], settings: CompactionSettings
) -> tuple[DowngradedThinking, ...]:
    """What each thinking block of `entries` not yet downgraded becomes."""
    downgrades: list[DowngradedThinking] = []
    for entry in entries:
        for index, block in enumerate(entry.message.content):
            if index in entry.replaced_blocks:
                continue
            before = entry.block_tokens[index]
            if isinstance(block, ThinkingBlock) and settings.reasoning_policy == "summarize":
                gist = " ".join(block.thinking.split())
                if len(gist) > REASONING_SUMMARY_CHARS:
                    gist = gist[:REASONING_SUMMARY_CHARS].rstrip() + "…"
                text = f"[Earlier reasoning, summarized as plain text: {gist}]"
                downgrades.append(
                    DowngradedThinking(entry.position, index, "summarized", text, before, 0)
                )
            elif isinstance(block, ThinkingBlock | RedactedThinkingBlock):
                downgrades.append(
                    DowngradedThinking(entry.position, index, "dropped", None, before, 0)
                )
    return tuple(downgrades)
