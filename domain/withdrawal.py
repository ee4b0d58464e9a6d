"""Withdrawing the end of the conversation from the view; history stays.

The API asks that a turn the model refused (`stop_reason: "refusal"`) be removed or
rephrased before the conversation goes on: a request that still holds it is refused again.
A chat host also lets people edit their last prompt or ask again, and an agent may replace a
tool result. Each takes the last messages out of what the model sees, from a position to the
end (by default the last user prompt, the whole turn), without rewriting history:
`TurnWithdrawn` records it, and the withdrawn messages stay in their `MessageAppended` events
for the audit. What is left is the view up to that position, as the compactions since show
it, so every reply still shown keeps the prefix it was produced under (thinking stays
valid), and the conversation goes on from there: a new prompt after a reply, the calls'
results again after a reply that made calls, a reply again after a user message.

Only messages the retained tail holds can be withdrawn: what a compaction summarized is in
a summary chunk and the ledger (withdraw from a later message, or start a new session from
the messages before it). The `role: "system"` messages withdrawn (instructions given during
the turn) are not lost: they wait for the next user message again, as a reconfiguration made
between turns does. Positions are reused: the next message appended takes the first
withdrawn one's.

`abridged.domain.session.Session` inherits the command and lists the event under its own
name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.domain import CanMutateAggregate

from abridged.domain.errors import TurnNotWithdrawableError
from abridged.domain.events import SessionEvent
from abridged.domain.indexes import recompute, replaced_count
from abridged.domain.reply_shapes import leads_with_compaction
from abridged.domain.state import SessionState


class Withdrawals(SessionState):
    """The command that withdraws the last turn from the view."""

    if TYPE_CHECKING:  # eventsourcing's `Aggregate` provides it, in `Session`

        def trigger_event(
            self, event_class: type[CanMutateAggregate[UUID]], **kwargs: Any
        ) -> None: ...

    class TurnWithdrawn(SessionEvent):
        """The messages from `position` to the end left the view (`count` of them), for
        `reason`; their system messages wait for the next user message."""

        position: int
        count: int
        reason: str

        def apply(self, session: SessionState) -> None:
            withdraw_from(session, self.position)

    def withdrawable_from(self, position: int | None = None) -> int:
        """The position a withdrawal would start at: `position`, or the last user prompt in
        view. Raises `TurnNotWithdrawableError` when the retained tail does not hold it, or
        when a reply from it on began with the API's own compaction."""
        first = self.retained_from
        if position is None:
            prompts = [p for p in self.prompt_positions if p >= first]
            if not prompts and not self.entries and not self.summaries:
                raise TurnNotWithdrawableError("no user prompt is in view: there is no message")
            if not prompts:
                raise TurnNotWithdrawableError(
                    "no user prompt is in view: a compaction summarized the one that began "
                    "the last turn; withdraw from a later message (`position`, "
                    + (
                        f"{first} to {self.message_count - 1})"
                        if self.entries
                        else "none is in view)"
                    )
                )
            position = prompts[-1]
        if not first <= position < self.message_count:
            held = (
                f"the retained tail holds positions {first} to {self.message_count - 1}"
                if self.entries
                else "the view holds no message"
            )
            where = "a compaction summarized it" if position < first else "there is none"
            raise TurnNotWithdrawableError(
                f"no message at position {position} is in view ({where}); {held}"
            )
        for entry in self.entries[position - first :]:
            if leads_with_compaction(entry.message):
                raise TurnNotWithdrawableError(
                    f"the reply at position {entry.position} began with the API's own "
                    "compaction, which moved the view: what came before it cannot come back"
                )
        return position

    def withdraw_turn(self, reason: str, position: int | None = None) -> int:
        """Takes the messages from `position` (by default the last user prompt in view) to
        the end out of the view (`TurnWithdrawn`); how many left it. Raises
        `TurnNotWithdrawableError`, recording nothing, when it cannot."""
        start = self.withdrawable_from(position)
        count = self.message_count - start
        self.trigger_event(self.TurnWithdrawn, position=start, count=count, reason=reason)
        return count


def withdraw_from(session: SessionState, position: int) -> None:
    """The state with the messages from `position` on out of the retained tail: the tail,
    its indexes and counts as they were before the message at `position` was appended."""
    keep = position - session.retained_from
    withdrawn = list(session.entries[keep:])
    del session.entries[keep:]
    del session.entry_versions[keep:]
    session.message_count = position
    session.tail_tokens -= sum(e.shown_tokens for e in withdrawn)
    if session.replaced_blocks is not None:
        session.replaced_blocks -= replaced_count(withdrawn)
    instructions = tuple(e.message for e in withdrawn if e.message.is_system)
    if instructions:
        session.queued_system = (*instructions, *session.queued_system)
    if session.counted_system_tokens is not None:
        session.counted_system_tokens -= sum(
            e.shown_tokens for e in withdrawn if e.message.is_system
        )
    # Every index of a prefix of the tail is the prefix of the index (sums, positions) or,
    # for the calls in view and those awaiting results, what the kept messages make.
    for entry in withdrawn:
        for use in entry.message.tool_uses:
            session.tool_ids.pop(use.id, None)
    last = session.entries[-1:] if keep else []
    session.open_tool_ids = recompute(last, session.settings).open_tool_ids
    session.prompt_positions = [p for p in session.prompt_positions if p < position]
    session.thinking_positions = [p for p in session.thinking_positions if p < position]
    del session.output_sums[keep + 1 :]
    del session.saving_sums[keep + 1 :]
    del session.thinking_sums[keep + 1 :]
    del session.shown_messages[keep:]
    if session.thinking_producers:
        session.thinking_producers = [p for p in session.thinking_producers if p[0] < position]
    if session.turn_context:
        session.turn_context = [c for c in session.turn_context if c[0] < position]
        session.turn_context_tokens = sum(c[2] for c in session.turn_context)
    session.prune_boundary = min(session.prune_boundary, position)
    session.last_compaction_at = min(session.last_compaction_at, position)
    # The loop guards stay: a compaction judged futile before the turn is as futile without
    # it, and one made during the turn left its summary in view (holding one back is safe:
    # the guards never hold back a compaction the request needs to fit).
    if session.thinking_seen and position <= (session.first_thinking_at or 0):
        # The first thinking the session saw was withdrawn: it has seen none (a position
        # unknown, in a state saved before it was kept, counts as seen before).
        session.thinking_seen = False
        session.first_thinking_at = None
