"""Never stuck: a message too large for any request is shown reduced, its history kept whole.

A session can always send its next request unless what can never be reduced does not fit:
the system prompt, the tool definitions, and what the model's own turn must carry back
byte for byte (signed thinking, server tool calls and their results, block types not known
yet). That is checked when a session starts and when a message is appended
(`check_room`), so the error comes with the message that causes it and nothing is written.

Everything else is bounded at append (`plan_degradations`): each message is shown at most
`message_cap` tokens, so the last exchange (a tool call and its result, or a prompt) fits
beside the system prompt, the tools and the summaries whatever else is compacted. A user
prompt that a request can hold whole (`message_room`) is shown whole (`whole_prompts`), and
reduced to the cap later, when the context must shrink (`abridged.domain.whole_prompts`):
until then, only the request that answers it needs it. Long texts
and tool outputs are shown head and tail, the long strings of a tool call's input too (the
input keeps its shape), and an image or document that does not fit becomes a placeholder
naming its type and size. The plan is a `Truncation` per block, recorded on the
`MessageAppended` event like tool-output truncation.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Protocol

from abridged.domain.block_cuts import reduce_block, shown_whole_or_not
from abridged.domain.errors import ContextTooSmallError
from abridged.domain.messages import (
    SERVER_TOOL_RESULT_TYPES,
    Block,
    ImageBlock,
    Message,
    Role,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireBlock,
)
from abridged.domain.reply_shapes import calls_waiting, carried_span, results_carried
from abridged.domain.settings import CompactionSettings, Limits
from abridged.domain.tokens import (
    MESSAGE_OVERHEAD,
    REQUEST_OVERHEAD,
    CountedEntry,
    CountText,
)
from abridged.domain.truncation import Truncation, fair_shares, plan_truncations

MIN_BLOCK_TOKENS = 48
"""The least a reduced block is aimed at: a marker and a little of each end."""
SAFETY = 0.9
"""The share of the (calibrated) budget the cap plans with, for estimates that drift."""
_REDUCIBLE_WIRE = frozenset({"document", "image", "search_result"}) | SERVER_TOOL_RESULT_TYPES


class ShownEntry(CountedEntry, Protocol):
    """A retained message as the view shows it (`abridged.domain.context.Entry`)."""

    @property
    def truncations(self) -> tuple[Truncation, ...]: ...
    @property
    def replacements(self) -> tuple[object, ...]: ...
    @property
    def replaced_blocks(self) -> frozenset[int]: ...
    @property
    def shown_tokens(self) -> int: ...


def salient_of(settings: CompactionSettings) -> tuple[int, int]:
    """What a text block cut keeps of its middle's salient lines, and by which rules."""
    return settings.salient_chars, settings.salient_rules


def reducible(block: Block) -> bool:
    """Whether a block may be shown reduced: text, tool calls and outputs, images,
    documents, search results, and server tools' results (their long plain strings; the
    encrypted parts stay). Thinking, server tool calls and unknown types go to the API as
    they are or not at all."""
    if isinstance(block, WireBlock):
        return block.type in _REDUCIBLE_WIRE
    return isinstance(block, TextBlock | ToolUseBlock | ToolResultBlock | ImageBlock)


def irreducible_tokens(message: Message, block_counts: Sequence[int]) -> int:
    """Tokens of `message` no view can reduce (its overhead included); a system message is
    an instruction, like the system prompt: none of it is reduced."""
    return MESSAGE_OVERHEAD + sum(
        tokens
        for block, tokens in zip(message.content, block_counts, strict=True)
        if message.role is Role.SYSTEM or not reducible(block)
    )


def fixed_tokens(
    limits: Limits, system_tokens: int, tools_tokens: int, system_messages: int = 0
) -> int:
    """What every request carries besides the retained messages, at its largest:
    `system_messages` are the tokens of the `role: "system"` messages in view, which no
    compaction summarizes (carried after the summaries, or in the tail)."""
    return (
        REQUEST_OVERHEAD
        + system_tokens
        + tools_tokens
        + system_messages
        + limits.summaries_tokens
        + MESSAGE_OVERHEAD  # the summaries may need a user message of their own
    )


def message_room(
    limits: Limits,
    system_tokens: int,
    tools_tokens: int,
    calibration: float = 1.0,
    system_messages: int = 0,
) -> int:
    """What the budget (with its margin, `SAFETY`, and the calibration) leaves the retained
    messages beside the fixed part: all a request can hold of them, whatever is compacted."""
    usable = math.floor(limits.budget * SAFETY / max(1.0, calibration))
    return usable - fixed_tokens(limits, system_tokens, tools_tokens, system_messages)


def message_cap(
    limits: Limits,
    system_tokens: int,
    tools_tokens: int,
    calibration: float = 1.0,
    partner_tokens: int | None = None,
    system_messages: int = 0,
) -> int:
    """The most one message is shown as. The last exchange (a tool call and its results)
    is sent whatever else is compacted, so a message gets half of what the fixed part leaves,
    or, answering tool calls, what the message that made them (`partner_tokens`) leaves."""
    room = message_room(limits, system_tokens, tools_tokens, calibration, system_messages)
    share = room // 2 if partner_tokens is None else room - partner_tokens
    return max(MESSAGE_OVERHEAD + MIN_BLOCK_TOKENS, share)


def check_room(
    limits: Limits,
    system_tokens: int,
    tools_tokens: int,
    irreducible: int = 0,
    *,
    calibration: float = 1.0,
    what: str = "",
    system_messages: int = 0,
) -> None:
    """Raises `ContextTooSmallError` when the system prompt, the tools, the system messages
    in view, the room a compaction's summaries may take and `irreducible` (tokens of the
    last exchange that cannot be reduced; without it, the smallest exchange) do not fit the
    budget."""
    least = irreducible or 2 * (MESSAGE_OVERHEAD + MIN_BLOCK_TOKENS)
    fixed = fixed_tokens(limits, system_tokens, tools_tokens, system_messages)
    need = math.ceil((fixed + least) * max(1.0, calibration))
    if need <= limits.budget:
        return
    summaries = fixed - REQUEST_OVERHEAD - system_tokens - tools_tokens - system_messages
    instructions = (
        f"the system messages kept in view ({system_messages:,}), " if system_messages else ""
    )
    last = (
        f"{what or 'what cannot be reduced'} ({irreducible:,})"
        if irreducible
        else (f"the smallest exchange ({least:,})")
    )
    # The parts are as counted; the need is calibrated to what the provider reported, so
    # without saying so the parts would not add up to it.
    scaled = (
        f" ({fixed + least:,} as counted, x{calibration:.2f} the session's calibration to the "
        "provider's counts)"
        if calibration > 1.0
        else ""
    )
    raise ContextTooSmallError(
        f"the system prompt ({system_tokens:,} tokens), the tools ({tools_tokens:,}), "
        f"{instructions}the room kept for summaries ({summaries:,}) and {last} need "
        f"{need:,} tokens{scaled}, more than the "
        f"budget of {limits.budget:,} (window {limits.window:,} minus "
        f"{limits.reserved_output:,} reserved for output); nothing was written",
        system_tokens=system_tokens,
        tools_tokens=tools_tokens,
        irreducible_tokens=irreducible,
        budget=limits.budget,
    )


def shaped(
    message: Message,
    counts: Sequence[int],
    count: CountText,
    *,
    limits: Limits,
    fixed: tuple[int, int, int],
    calibration: float,
    retained: Sequence[ShownEntry],
) -> tuple[tuple[Truncation, ...], tuple[int, ...]]:
    """How `message`, whose blocks count `counts`, is shown when it follows the `retained`
    messages (only the last two are read):
    its tool outputs truncated to the settings' share (`plan_truncations`), then every
    reducible block within `message_cap`; with `whole_prompts`, a user prompt a request can
    hold whole (`message_room`) is shown whole. `fixed` is the system prompt's, the tools' and
    the system messages' in view (before `message`) tokens.
    Raises `ContextTooSmallError` when what the exchange must send unchanged does not fit
    (`check_room`). Returns the truncations and the per-block counts as shown."""
    system_tokens, tools_tokens, system_messages = fixed
    previous = retained[-1] if retained else None
    settings = limits.settings
    truncations, shown_counts = plan_truncations(
        message,
        limits.tool_output_tokens,
        count,
        counts,
        settings.salient_chars,
        settings.salient_rules,
    )
    salient = salient_of(settings)
    irreducible = exchange_need(
        message, counts, count, retained, truncations, shown_counts, salient
    )
    check_room(
        limits,
        system_tokens,
        tools_tokens,
        irreducible,
        calibration=calibration,
        what="this exchange at its smallest (thinking, server tools and system messages whole)",
        system_messages=system_messages,
    )
    if (
        settings.whole_prompts
        and message.is_user_prompt
        and MESSAGE_OVERHEAD + sum(shown_counts)
        <= message_room(limits, system_tokens, tools_tokens, calibration, system_messages)
    ):
        # Its first request holds it beside the fixed part whatever else is compacted; the
        # requests after it that cannot are prepared with it reduced to the cap then.
        return tuple(truncations), tuple(shown_counts)
    answers = previous is not None and bool(message.tool_results)
    partner = previous.shown_tokens if previous is not None and answers else None
    span = carried_span(retained) if results_carried(message) else ()
    if answers and previous is not None and results_carried(previous.message):
        # Answering a reply that went with an earlier one: all of them go with this.
        span = carried_span(retained)
    if span:
        partner = sum(e.shown_tokens for e in span)
    cap = message_cap(limits, system_tokens, tools_tokens, calibration, partner, system_messages)
    return plan_degradations(
        message,
        cap,
        count,
        shown_counts,
        truncations,
        salient,
    )


def exchange_need(
    message: Message,
    counts: Sequence[int],
    count: CountText,
    retained: Sequence[ShownEntry],
    truncations: Sequence[Truncation],
    shown_counts: Sequence[int],
    salient: tuple[int, int] = (0, 1),
) -> int:
    """Tokens the exchange `message` (after the `retained` messages) must send unchanged
    whatever is compacted, at its smallest: what `shaped` checks room for (`check_room`).
    `truncations` and `shown_counts` are its tool outputs' cuts and its blocks as shown."""
    previous = retained[-1] if retained else None
    irreducible = exchange_irreducible(
        message,
        counts,
        previous.message if previous else None,
        previous.block_tokens if previous else (),
    )
    if message.role is Role.ASSISTANT and message.tool_uses:
        # Calls go out with their results: room for those at their smallest, since calls
        # accepted whose results could not be would leave the session stuck.
        irreducible = smallest_tokens(message, counts) + MESSAGE_OVERHEAD
        irreducible += MIN_BLOCK_TOKENS * len(message.tool_uses)
    span = carried_span(retained) if results_carried(message) else ()
    waiting = calls_waiting(message) if message.role is Role.ASSISTANT else ()
    if span or waiting or (message.tool_uses and _holds_server_results(message)):
        # It goes with them at its smallest, as counted (`least_shown`); so does a reply
        # whose calls' results go with it beside a server tool's result: that keeps its
        # shape (encrypted parts whole), often far more than `MIN_BLOCK_TOKENS`.
        _, least = plan_degradations(message, 0, count, shown_counts, truncations, salient)
        irreducible = MESSAGE_OVERHEAD + sum(least)
        if message.tool_uses:
            irreducible += MESSAGE_OVERHEAD + MIN_BLOCK_TOKENS * len(message.tool_uses)
    if span:
        # A reply holding the results of an earlier reply's server calls goes with it and
        # the messages between (no cut falls between them): room for all at their smallest.
        irreducible += sum(least_shown(e, count, salient) for e in span)
    if waiting:
        # A paused turn whose continuation could never be recorded would be stuck: room for
        # that reply, holding the results of its calls, at its smallest.
        irreducible += MESSAGE_OVERHEAD + MIN_BLOCK_TOKENS * len(waiting)
    if message.role is Role.SYSTEM:
        irreducible += turn_room(retained)
    return irreducible


def plan_degradations(
    message: Message,
    cap: int,
    count: CountText,
    block_counts: Sequence[int],
    truncations: Sequence[Truncation] = (),
    salient: tuple[int, int] = (0, 1),
    replaced: Collection[int] = (),
) -> tuple[tuple[Truncation, ...], tuple[int, ...]]:
    """Truncations that show `message` in at most about `cap` tokens, on top of
    `truncations` (tool outputs already cut); `block_counts` are the blocks' shown counts.
    A text block cut keeps up to `salient` characters (at most a third of what it shows) of
    its middle's salient lines, by the rules given beside them, as a tool output does. The
    blocks at `replaced` (pruned, or reasoning downgraded) are shown by their replacements
    and left as they are.

    The reducible blocks share what the others leave (water-filling: small ones stay whole),
    and a block that cannot come down to its share leaves the rest to the others.
    Returns all truncations, by block, and the shown message's per-block counts."""
    counts = list(block_counts)
    if MESSAGE_OVERHEAD + sum(counts) <= cap or message.role is Role.SYSTEM:
        # A system message is shown whole, as the system prompt is (`irreducible_tokens`).
        return tuple(truncations), tuple(counts)
    indices = [
        i for i, block in enumerate(message.content) if reducible(block) and i not in replaced
    ]
    if not indices:
        return tuple(truncations), tuple(counts)
    kept = MESSAGE_OVERHEAD + sum(c for i, c in enumerate(counts) if i not in indices)
    room = cap - kept
    by_index = {t.block_index: t for t in truncations}
    cut_before = frozenset(by_index)
    while True:
        # Each block at least as `smallest_tokens` counts it, as the room checks do.
        target = max(room, sum(min(counts[i], MIN_BLOCK_TOKENS) for i in indices))
        over: list[int] = []
        for index, allowed in zip(
            indices, fair_shares([counts[i] for i in indices], target), strict=True
        ):
            if counts[index] <= allowed:
                continue
            # The whole block's count (when nothing cut it yet) tells its density: the first
            # cut tried is about the right size, counted once or twice, not five times.
            whole = counts[index] if index not in by_index else None
            reduced = reduce_block(
                message, index, max(allowed, MIN_BLOCK_TOKENS), count, whole, salient
            )
            if reduced is not None and reduced[1] < counts[index]:
                by_index[index], counts[index] = reduced
            if counts[index] > max(allowed, MIN_BLOCK_TOKENS):
                over.append(index)
        if not over or len(over) == len(indices):
            _show_whole_again(message, cap, by_index, counts, block_counts, cut_before)
            return tuple(by_index[i] for i in sorted(by_index)), tuple(counts)
        # A block that cannot come down to its share (a server tool's result keeps its
        # shape) leaves the others less: they share what it leaves.
        room -= sum(counts[i] for i in over)
        indices = [i for i in indices if i not in over]


def _show_whole_again(
    message: Message,
    cap: int,
    by_index: dict[int, Truncation],
    counts: list[int],
    block_counts: Sequence[int],
    cut_before: Collection[int],
) -> None:
    """Shows whole again, smallest first, the placeholders this plan made that fit in what
    the message leaves of `cap`: an image or a document is shown whole or not at all, so the
    share it was given and could not use goes to the others of its kind."""
    placeholders = sorted(
        (block_counts[i], i)
        for i in by_index
        if i not in cut_before and shown_whole_or_not(message.content[i])
    )
    spare = cap - MESSAGE_OVERHEAD - sum(counts)
    for whole, index in placeholders:
        if whole - counts[index] <= spare:
            spare -= whole - counts[index]
            counts[index] = whole
            del by_index[index]


def least_shown(entry: ShownEntry, count: CountText, salient: tuple[int, int] = (0, 1)) -> int:
    """Tokens `entry` is shown in at its smallest, as counted: `smallest_tokens` aims each
    reduced block at `MIN_BLOCK_TOKENS`, which the shape a server tool's result keeps (its
    types, ids, urls, encrypted parts) can exceed."""
    message, counts = entry.message, entry.block_tokens
    replaced = entry.replaced_blocks
    _, least = plan_degradations(message, 0, count, counts, entry.truncations, salient, replaced)
    return entry.shown_tokens - sum(counts) + sum(least)


def smallest_tokens(message: Message, block_counts: Sequence[int]) -> int:
    """Tokens `message` takes shown at its smallest: what cannot be reduced whole, each
    reducible block at most the least a reduced block is aimed at."""
    return irreducible_tokens(message, block_counts) + sum(
        min(tokens, MIN_BLOCK_TOKENS)
        for block, tokens in zip(message.content, block_counts, strict=True)
        if message.role is not Role.SYSTEM and reducible(block)
    )


def turn_room(retained: Sequence[ShownEntry]) -> int:
    """Room a system message after `retained` leaves (it stays in every later request): the turn
    it follows at its smallest, with the calls it answers, and at least a later prompt's."""
    least = MESSAGE_OVERHEAD + MIN_BLOCK_TOKENS
    k = len(retained) - 1  # read back past the system messages only: bodies load lazily
    while k >= 0 and retained[k].message.role is Role.SYSTEM:
        k -= 1
    if k < 0:
        return least
    turn = retained[k]
    room = smallest_tokens(turn.message, turn.block_tokens)
    if turn.message.tool_results and k > 0:
        made = retained[k - 1]
        room += smallest_tokens(made.message, made.block_tokens)
    return max(room, least)


def exchange_irreducible(
    message: Message,
    counts: Sequence[int],
    previous: Message | None,
    previous_counts: Sequence[int],
) -> int:
    """Tokens of the exchange `message` closes at its smallest: a user message (its
    reducible blocks shown at their least, as the planner shows them) and, answering tool
    calls, the assistant message that made them; another message's irreducible tokens."""
    if message.role is not Role.USER:
        return irreducible_tokens(message, counts)
    own = smallest_tokens(message, counts)
    if message.tool_results and previous is not None:
        return own + smallest_tokens(previous, previous_counts)
    return own


def _holds_server_results(message: Message) -> bool:
    return any(
        isinstance(block, WireBlock) and block.type in SERVER_TOOL_RESULT_TYPES
        for block in message.content
    )
