"""Running strategies over transcripts and measuring them: `simulate`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from abridged.adapters.recorded import is_reply
from abridged.adapters.simulation.cache import (
    CacheRates,
    PromptCache,
    block_text,
    request_blocks,
)
from abridged.adapters.simulation.facts import Fact, extract_facts, kept_share, request_text
from abridged.adapters.simulation.outcomes import DOES_NOT_FIT, NO_REQUEST, Outcome
from abridged.adapters.simulation.strategies import Setup, Strategy
from abridged.adapters.transcripts import Transcript
from abridged.domain.messages import Message, RedactedThinkingBlock, Role, ThinkingBlock
from abridged.domain.replies import is_incomplete, shown_reply
from abridged.domain.settings import CompactionSettings, Limits
from abridged.domain.tokens import SYSTEM_MESSAGE_OPEN, message_tokens, request_tokens

DEPTH_CAP = 60
"""Last messages compared, at most, for the recent-context depth."""
RECENT_TURNS = 2
RECENT_SHARE = 0.08
"""The working context the README promises a request keeps whole: the last two turns, or the
recent messages that fit in this share of the window (the default `keep_recent_share`)."""
AVERAGE_SAMPLES = 40
"""Requests sampled (evenly) for the average facts kept: looking every fact up in every
request of a long session costs more than the rest of the run."""


def _memo(count: Callable[[str], int]) -> Callable[[str], int]:
    cache: dict[str, int] = {}

    def counted(text: str) -> int:
        found = cache.get(text)
        if found is None:
            found = cache[text] = count(text)
        return found

    return counted


def measure(
    transcript: Transcript,
    strategy: Strategy,
    setup: Setup,
    rates: CacheRates,
    count: Callable[[str], int],
    on_request: Callable[[], None] | None = None,
) -> Outcome:
    """Replays `transcript` with `strategy` and measures what its requests keep and cost;
    `on_request` is called as each request is measured."""
    name = strategy.name
    if strategy.fits_only(transcript):
        whole = request_tokens(transcript.system, transcript.tools, transcript.messages, count)
        if whole > setup.window - setup.reserved_output:
            return Outcome(transcript.source, name, applicable=False, not_applicable=DOES_NOT_FIT)
    positions = [k for k, m in enumerate(transcript.messages) if is_reply(k, m)]
    if not positions:
        return Outcome(transcript.source, name, applicable=False, not_applicable=NO_REQUEST)
    facts = extract_facts(transcript.messages)
    step = max(1, len(positions) // AVERAGE_SAMPLES)
    cache = PromptCache(rates)
    sizes: list[int] = []
    read = written = 0
    billed = 0.0
    sampled: list[float] = []
    final_text = ""
    final_position = 0
    wires: list[dict[str, Any] | None] = [None] * len(transcript.messages)
    cap = Limits(setup.window, setup.reserved_output, CompactionSettings()).tool_output_tokens
    depths: list[int] = []
    short = 0
    released = 0
    for index, body in enumerate(strategy.requests(transcript)):
        if on_request is not None:
            on_request()
        if body is None:
            continue
        depth, whole_tokens, turns, back = recent_depth(
            body, transcript.messages, positions[index], wires, count, cap
        )
        # Only the last DEPTH_CAP messages before a request are compared, and requests move
        # forward: the wire forms behind them are let go, not kept for the whole transcript.
        while released < positions[index] - DEPTH_CAP:
            wires[released] = None
            released += 1
        if depth < min(positions[index], DEPTH_CAP):
            depths.append(depth)
            room = RECENT_SHARE * setup.window
            if turns < RECENT_TURNS and back is not None and whole_tokens + back <= room:
                short += 1
        billing = cache.bill(request_blocks(body, count))
        sizes.append(billing.total)
        read += billing.read
        written += billing.written
        billed += billing.billed(rates)
        final_text = request_text(body)
        final_position = positions[index]
        if index % step == 0:
            seen = [f for f in facts if f.position < positions[index]]
            sampled.append(kept_share(seen, final_text))
    final_facts = [f for f in facts if f.position < final_position]
    counters = strategy.counters
    return Outcome(
        transcript=transcript.source,
        strategy=name,
        applicable=True,
        requests=len(sizes) + counters.not_sent,
        not_sent=counters.not_sent,
        prunes=counters.prunes,
        compactions=counters.compactions,
        repeated_compactions=counters.repeated_compactions,
        forced_trims=counters.forced_trims,
        summarizer_calls=counters.summarizer_calls,
        summarizer_input_tokens=counters.summarizer_input_tokens,
        summarizer_output_tokens=counters.summarizer_output_tokens,
        peak_tokens=max(sizes, default=0),
        mean_tokens=sum(sizes) / len(sizes) if sizes else 0.0,
        input_tokens=sum(sizes),
        cache_read=read,
        cache_written=written,
        billed=billed,
        facts=len(final_facts),
        facts_final=kept_share(final_facts, final_text),
        facts_mean=sum(sampled) / len(sampled) if sampled else 1.0,
        facts_final_by_kind=_by_kind(final_facts, final_text),
        facts_by_kind_count=dict(Counter(f.kind for f in final_facts)),
        recent_depth_mean=sum(depths) / len(depths) if depths else float(DEPTH_CAP),
        recent_depth_min=min(depths, default=DEPTH_CAP),
        short_tails=short,
        refused=counters.refused,
    )


def recent_depth(
    body: Mapping[str, Any],
    messages: Sequence[Message],
    position: int,
    wires: list[dict[str, Any] | None],
    count: Callable[[str], int],
    cap: int,
) -> tuple[int, int, int, int | None]:
    """How many of the last messages before `position` `body` sends whole (at most
    `DEPTH_CAP`), their tokens, how many of them are user prompts (turns), and the tokens
    one more step back would add (a message, with the call its results answer; `None` when
    there is none).

    Whole means as recorded, but for what every strategy must change: thinking, which only
    the turn in progress must carry back, a tool output over `cap` tokens (one message's
    share of the budget, all its outputs together), which is sent head and tail, a reply's
    blank text blocks, which no request may hold (`abridged.domain.replies`), and a system
    message a model without them is sent as marked text in the user message before it."""
    sent = body.get("messages", ())
    depth = tokens = turns = carried = folded = 0
    while depth - folded + carried < len(sent) and depth < min(position, DEPTH_CAP):
        original = position - 1 - depth
        wire = wires[original]
        if wire is None:
            wire = wires[original] = messages[original].to_wire()
        at = len(sent) - 1 - (depth - folded) - carried
        if sent[at]["role"] == "system" and wire["role"] != "system":
            # A system message a compaction carried out of the summarized range: it follows
            # the first message, whatever the tail after it; it stands for none of the tail.
            carried += 1
            continue
        if wire["role"] == "system" and sent[at]["role"] != "system":
            # Sent as marked text in the user message before it (a model without system
            # messages), or not at all once its turn is over (`clear_at`): as every request
            # to this model must show it.
            folded += 1
        else:
            shown = _plain(sent[at])
            if original + 1 < len(messages) and messages[original + 1].is_system:
                shown["content"] = _without_folded(shown["content"])
            if at == 0 or (at == 1 and _leads_with_block(sent[0])):
                # The first message may lead with the summary (and ledger) blocks; after the
                # API's compaction block, the second does.
                shown["content"] = shown["content"][-len(wire.get("content") or []) :]
            if (
                shown != wire
                and not _whole(shown, wire, cap, count)
                and not _as_shown(shown, messages[original])
            ):
                break
        tokens += message_tokens(messages[original], count)
        turns += messages[original].is_user_prompt
        depth += 1
    # What one more step back would have added: a message, with the call its results answer,
    # and, inside a tool loop led by thinking, back to a reply that starts with thinking (no
    # tail may start at another: `abridged.domain.cuts.cut_points`).
    more = position - 1 - depth
    if more >= 1 and depth < DEPTH_CAP:
        start = more - 1 if messages[more].tool_results else more
        step = sum(message_tokens(messages[k], count) for k in range(start, more + 1))
        if _in_thinking_loop(messages, start, position):
            while start > max(0, position - DEPTH_CAP) and not _leads_with_thinking(
                messages[start]
            ):
                start -= 1
                step += message_tokens(messages[start], count)
        return depth, tokens, turns, step
    return depth, tokens, turns, None


def _without_folded(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A user message's blocks without the system messages folded in after them, as marked
    text (`folded_system_messages`)."""
    end = len(content)
    while end and str(content[end - 1].get("text", "")).startswith(SYSTEM_MESSAGE_OPEN):
        end -= 1
    return content[:end]


def _as_shown(shown: dict[str, Any], message: Message) -> bool:
    """Whether `shown` is the reply as any request must show it: without its blank text
    blocks, or as the note of a reply with nothing left (`shown_reply`)."""
    return is_incomplete(message) and shown == shown_reply(message).to_wire()


def _in_thinking_loop(messages: Sequence[Message], start: int, position: int) -> bool:
    """Whether `start` is inside the tool loop the request at `position` continues, in a
    conversation with thinking: no user prompt from `start` on, and results last."""
    if start < 1 or not messages[position - 1].tool_results:
        return False
    if any(messages[k].is_user_prompt for k in range(start, position)):
        return False
    return any(_leads_with_thinking(m) for m in messages[start:position])


def _leads_with_thinking(message: Message) -> bool:
    return (
        message.role is Role.ASSISTANT
        and bool(message.content)
        and isinstance(message.content[0], ThinkingBlock | RedactedThinkingBlock)
    )


def _whole(
    shown: dict[str, Any], wire: dict[str, Any], cap: int, count: Callable[[str], int]
) -> bool:
    def visible(message: dict[str, Any]) -> list[dict[str, Any]]:
        return [b for b in message.get("content") or [] if b["type"] not in THINKING_TYPES]

    sent, original = visible(shown), visible(wire)
    if shown["role"] != wire["role"] or len(sent) != len(original):
        return False
    outputs = sum(count(block_text(b)) for b in original if b["type"] == "tool_result")
    for a, b in zip(sent, original, strict=True):
        if a == b:
            continue
        if not (
            a["type"] == b["type"] == "tool_result"
            and a.get("tool_use_id") == b.get("tool_use_id")
            and outputs > cap
        ):
            return False
    return True


THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


def _leads_with_block(message: Mapping[str, Any]) -> bool:
    """Whether the message is the API's compaction block alone (the request's first)."""
    content = message.get("content")
    return isinstance(content, list) and [b.get("type") for b in content] == ["compaction"]


def _plain(message: Mapping[str, Any]) -> dict[str, Any]:
    # A system message of its own fields only has no content.
    content = message.get("content") or []
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    return {
        "role": message["role"],
        "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in content],
    }


def _by_kind(facts: Sequence[Fact], text: str) -> dict[str, float]:
    kinds = sorted({f.kind for f in facts})
    return {k: round(kept_share([f for f in facts if f.kind == k], text), 4) for k in kinds}


def simulate(
    transcripts: Sequence[Transcript],
    setup: Setup,
    strategies: Sequence[Callable[[Setup], Strategy]],
    rates: CacheRates | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> list[Outcome]:
    """Every strategy on every transcript (a fresh strategy each time), measured.

    `progress(run, done)` follows the work: `done` is 0 as a run (`"<source> <strategy>"`)
    starts, then the requests measured since the last call, which over a run add up to
    `requests_to_measure` of its transcript (a strategy that does not apply skips them)."""
    rates = rates or CacheRates()
    count = _memo(setup.counter.count)
    outcomes = []
    for transcript in transcripts:
        expected = requests_to_measure(transcript)
        for make in strategies:
            strategy = make(setup)
            if progress is None:
                outcomes.append(measure(transcript, strategy, setup, rates, count))
                continue
            run = f"{transcript.source} {strategy.name}"
            measured = 0

            def one_more(run: str = run) -> None:
                nonlocal measured
                measured += 1
                progress(run, 1)

            progress(run, 0)
            outcomes.append(measure(transcript, strategy, setup, rates, count, one_more))
            if measured < expected:
                progress(run, expected - measured)
    return outcomes


def requests_to_measure(transcript: Transcript) -> int:
    """A run's requests: one before each reply (`is_reply`)."""
    return sum(is_reply(k, message) for k, message in enumerate(transcript.messages))
