"""Per-turn content on a model that binds thinking to its prefix: recorded, and shown where it
was first shown.

A host's `ContextProvider` gives content for each request (the date, the open files, ...).
For most models it goes last in the last user message and is never stored. A model that binds
each thinking block to its prefix refuses (or drops) a reply's thinking as soon as content it
was shown is gone or changed in the next request, and content that changes every turn would
do that at every turn. So for such a model the content is recorded (`TurnContextShown`: an
audit fact, what the model was shown and where) and every later request shows it at the same
place, unchanged: a text block after the last block of the user message it was first shown
with. New content goes at the end of the newest user message, so between compactions a
request only appends. Content leaves the view with its message, when a compaction summarizes
the range that holds it (one rewrite, with the rest). Content equal to the last one shown is
not recorded again.

`abridged.domain.session.Session` inherits the command and lists the event under its own name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.domain import CanMutateAggregate

from abridged.domain.events import SessionEvent
from abridged.domain.reply_shapes import pending_at_end
from abridged.domain.state import SessionState


class TurnContexts(SessionState):
    """The command that records per-turn content shown to a model that binds thinking."""

    if TYPE_CHECKING:  # eventsourcing's `Aggregate` provides it, in `Session`

        def trigger_event(
            self, event_class: type[CanMutateAggregate[UUID]], **kwargs: Any
        ) -> None: ...

    class TurnContextShown(SessionEvent):
        """Per-turn content (a `ContextProvider`'s) was shown to a model that binds thinking to
        its prefix, as a text block after the last block of the user message at `position`
        (`tokens`: that block's). Later requests show it there, unchanged, until the message
        leaves the view. Content shown at the same position before (a request prepared again
        before any reply) is replaced: no reply was produced under it."""

        position: int
        text: str
        tokens: int

        def apply(self, session: SessionState) -> None:
            shown = list(session.turn_context)
            if shown and shown[-1][0] == self.position:
                session.turn_context_tokens -= shown.pop()[2]
            session.turn_context = [*shown, [self.position, self.text, self.tokens]]
            session.turn_context_tokens += self.tokens

    @property
    def turn_context_position(self) -> int | None:
        """Where per-turn content goes now: the last user message (system messages may follow
        it), or `None` when no request awaits or nothing may follow that message (the tool
        results of a reply whose server tool call has not run: `takes_more_content`)."""
        if pending_at_end(lambda k: self.entries[k].message, len(self.entries)):
            return None
        for entry in reversed(self.entries):
            if not entry.message.is_system:
                return entry.position if self.awaiting_reply else None
        return None

    @property
    def last_turn_context(self) -> str | None:
        """The per-turn content shown last, while it is still in view."""
        return str(self.turn_context[-1][1]) if self.turn_context else None

    def show_turn_context(self, text: str, tokens: int) -> bool:
        """Records per-turn content shown from now on after the last user message
        (`TurnContextShown`); whether it was recorded (not when it equals the content shown
        last, or no request awaits)."""
        position = self.turn_context_position
        if position is None or not text.strip() or text == self.last_turn_context:
            return False
        self.trigger_event(self.TurnContextShown, position=position, text=text, tokens=tokens)
        return True

    def turn_context_problems(self, position: int, text: str) -> list[str]:
        """What is wrong with recording `text` after message `position` now (what the audit
        checks of each `TurnContextShown`): content is stored only for a model that binds
        thinking, after the message awaiting a reply, and only when it changed."""
        awaiting = self.turn_context_position
        problems = []
        if not self.thinking_bound:
            problems.append(f"{self.model} does not bind thinking: its content is not stored")
        if position != awaiting:
            problems.append(
                f"shown after message {position + 1}, but the request awaited "
                + ("no reply" if awaiting is None else f"a reply to message {awaiting + 1}")
                + ": it changes what earlier replies were produced under"
            )
        if text == self.last_turn_context:
            problems.append("the same content as the one shown last, recorded again")
        return problems
