"""The facts ledger a compaction leaves, and its facts read ahead of the compaction's record.

A compaction merges the facts of the messages it summarizes into the session's ledger
(`abridged.domain.ledger`). Reading those facts is most of a compaction's own work (about
0.4 s for a 1 MB prompt, redaction first: 0.3 s more), and it depends only on the messages
summarized and the decision. So a background compaction reads them while its summary is
written (`read_ahead`), outside any lock a request waits for, and the record, made holding
the session's command lock, finds them ready (`update`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from uuid import UUID

import attrs

from abridged.application.redaction import redact_each
from abridged.application.service_ports import ServicePorts
from abridged.application.summaries import WrittenSummary
from abridged.domain import ledger
from abridged.domain.context import render_summary
from abridged.domain.ledger import LedgerEntry, LedgerUpdate
from abridged.domain.messages import Message
from abridged.domain.planner import Decision
from abridged.domain.session import Session
from abridged.domain.tokens import text_block_tokens

__all__ = ["LedgerSource", "Ledgers", "ledger_source"]

READ_AHEAD_KEPT = 8
"""Facts read ahead that wait for their record at once (one per session compacting)."""


@attrs.frozen
class LedgerSource:
    """What a compaction's facts are read from: the summarized messages as stored, with
    their positions, and whether they start the session (its first prompt is the task)."""

    messages: tuple[tuple[int, Message], ...]
    first: bool


def ledger_source(session: Session, decision: Decision) -> LedgerSource:
    """The messages `decision` summarizes, as stored (not as shown): the ledger quotes them."""
    messages = tuple(
        (e.position, e.message) for e in session.entries if e.position < decision.retained_from
    )
    return LedgerSource(messages, session.retained_from == 0)


class Ledgers:
    """The ledger updates of one service's compactions (see the module)."""

    def __init__(self, ports: ServicePorts) -> None:
        self.ports = ports
        # The last update made, by session, version and decision: a compaction that hands the
        # prefix as sent to its summarizer needs the update before the summary is written and
        # again when it is recorded, with nothing recorded in between.
        self._last: tuple[tuple[object, ...], LedgerUpdate | None] | None = None
        self._ahead: OrderedDict[tuple[UUID, int, Decision], tuple[LedgerEntry, ...]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def read_ahead(
        self, session_id: UUID, generation: int, decision: Decision, source: LedgerSource
    ) -> None:
        """Reads the facts of a compaction decided at `generation` now, for `update` to find
        when the compaction is recorded (at the same generation, with the same decision)."""
        if decision.ledger_max_tokens <= 0:
            return
        extracted = self._extract(source, decision)
        with self._lock:
            self._ahead[(session_id, generation, decision)] = extracted
            while len(self._ahead) > READ_AHEAD_KEPT:
                self._ahead.popitem(last=False)

    def update(self, session: Session, decision: Decision) -> LedgerUpdate | None:
        """The facts ledger after this compaction: the summarized messages' facts merged
        into the session's, as a segment appended to the earlier ones, or all consolidated
        within the decision's room (`None` when it holds nothing and gets no room)."""
        if decision.ledger_max_tokens <= 0:
            # No room (or the ledger turned off) while it holds entries: they all go, named
            # in the event, since the request was fitted without them.
            if not session.ledger_tokens:
                return None
            return ledger.consolidate(session.ledger, 0, self.ports.counter.count)
        key = (session.id, session.version, decision)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        with self._lock:
            extracted = self._ahead.pop((session.id, session.generation, decision), None)
        if extracted is None:
            extracted = self._extract(ledger_source(session, decision), decision)
        # What the kept tail sends verbatim is left out until a compaction folds the tail.
        tail = [
            (e.position, e.shown_message)
            for e in session.entries
            if e.position >= decision.retained_from
        ]
        update = ledger.advance(
            session.ledger,
            session.ledger_tokens,
            len(session.ledger_segments),
            extracted,
            decision.ledger_max_tokens,
            self.ports.counter.count,
            ledger.carried(tail),
        )
        self._last = (key, update)
        return update

    def _extract(self, source: LedgerSource, decision: Decision) -> tuple[LedgerEntry, ...]:
        # Redacted before extraction: a ledger entry is re-sent with every later request,
        # and its text is cut to a length that could leave half a secret unrecognized.
        summarized = [(p, redact_each(self.ports.redactor, m)) for p, m in source.messages]
        # The first compaction folds the session's first prompt, its task: kept longer
        # where there is room. (Later ones fold later messages only.)
        task = ledger.REQUEST_CHARS
        if source.first:
            task = ledger.task_chars(
                summarized, decision.ledger_max_tokens, self.ports.counter.count
            )
        return ledger.extract(summarized, task=task)

    def unrepeated(
        self, session: Session, decision: Decision, written: WrittenSummary, update: LedgerUpdate
    ) -> WrittenSummary:
        """The new chunk without the lines the ledger quotes verbatim (`ledger.unrepeated`):
        both are sent with every request. Counted as `SummaryWriter` counts a chunk."""
        text = ledger.unrepeated(written.text, update.entries)
        if text == written.text:
            return written
        folded = decision.resummarize and session.summaries
        first = session.summaries[0].first_position if folded else session.retained_from
        rendered = render_summary(text, first, decision.retained_from - 1, session.generation + 1)
        tokens = text_block_tokens(rendered, self.ports.counter.count)
        return attrs.evolve(written, text=text, tokens=tokens)
