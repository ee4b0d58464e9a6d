"""A request whose client went away before its reply.

Clients cancel all the time: the user presses Esc mid-stream (Claude Code then joins
"[Request interrupted by user]" to its last message, or keeps the cut reply's text), an SDK
gives up on a request and sends it again. The messages such a request appended after the
last reply have no answer, and the client's next request may hold them changed, again, or
not at all: they are withdrawn from the session (`TurnWithdrawn`, reason `ABANDONED`), and
routing no longer counts them (`abridged.adapters.http.history`), so that request goes on in
the same session instead of a branch started from the whole history.
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

import attrs

from abridged.adapters.http.digests import message_digest
from abridged.adapters.http.history import ABANDONED, ClientHistory, Route, Stored, StoredDigests
from abridged.adapters.http.locks import RequestLocks
from abridged.application.service import PreparedRequest, Sessions
from abridged.domain.context import build_context
from abridged.domain.errors import SessionError
from abridged.domain.messages import Role

logger = logging.getLogger(__name__)


@attrs.frozen
class Prepared:
    """A request ready to go upstream, and what recording its reply (or taking its messages
    back) needs."""

    session_id: UUID
    body: dict[str, Any]
    prepared: PreparedRequest
    messages: int
    """How many messages the session holds once this request's are appended."""
    last: str
    """The digest of the last of them."""
    unanswered: int = 0
    """How many of its history's messages come after the last reply: those withdrawn when
    its client goes away before the reply (`take_back`), whether this request appended
    them or an earlier one that was not answered (a request sent again after a 529)."""
    tail: tuple[str, ...] = ()
    """Their digests: withdrawn only while the session's view still ends with them."""

    @classmethod
    def of(
        cls, found: Route, body: dict[str, Any], prepared: PreparedRequest, history: ClientHistory
    ) -> Prepared:
        """The request `body` prepared for the session `found` routes `history` to."""
        count = unanswered(history, found)
        return cls(
            found.session_id,
            body,
            prepared,
            len(history),
            history.digests[-1],
            count,
            history.digests[len(history) - count :],
        )


@attrs.define
class Relayed:
    """Whether a stream reached its end (whole, or broken off by the upstream) rather than
    being left by its client."""

    ended: bool = False


def take_back(
    sessions: Sessions,
    locks: RequestLocks,
    stored: StoredDigests,
    ready: Prepared,
    reason: str = ABANDONED,
) -> bool:
    """The client of `ready` went away before its reply (or the reply was empty,
    `EMPTY_REPLY`): the messages of its history after the last reply are withdrawn;
    whether they were. Nothing is withdrawn once the session has moved on (a reply
    recorded, another request's messages appended), nor when its view does not end with
    those messages (a host withdrew them, a compaction summarized them)."""
    if not ready.unanswered:
        return False
    with locks.held(ready.session_id):
        if not holds_last(stored.get(ready.session_id), ready):
            return False
        try:
            session = sessions.session(ready.session_id)
            shown = session.entries[-ready.unanswered :]
            if tuple(message_digest(entry.message) for entry in shown) != ready.tail:
                return False
            sessions.withdraw_turn(
                ready.session_id,
                position=session.message_count - ready.unanswered,
                reason=reason,
            )
        except SessionError as error:
            # The messages stay: the next request goes on from them, or in a branch.
            logger.info("session %s: nothing withdrawn: %s", ready.session_id, error)
            return False
    return True


def holds_last(known: Stored | None, ready: Prepared) -> bool:
    """Whether the session still ends with the messages `ready` was prepared from: the same
    count, and the same last message (a message withdrawn and another appended in its place
    leaves the count as it was)."""
    return (
        known is not None
        and len(known.digests) == ready.messages
        and known.digests[-1] == ready.last
    )


def empty_reply(reply: dict[str, Any]) -> bool:
    """Whether a reply says nothing a request may carry back: no content, or only text
    blocks of white space (the API answers so at times, after tool results)."""
    content = reply.get("content")
    if not isinstance(content, list):
        return False
    return all(
        isinstance(block, dict)
        and block.get("type") == "text"
        and not str(block.get("text") or "").strip()
        for block in content
    )


def unanswered(history: ClientHistory, found: Route) -> int:
    """How many messages come after the last reply in a request's history, whether it
    appends them or a request before it did (one the upstream refused, sent again); 0 for a
    request answered already (`replay`), or when one of them is a `role: "system"` message
    (a withdrawal queues those for the next user message, where the client would send them
    again)."""
    if found.replay is not None:
        return 0
    count = 0
    for message in reversed(history.messages):  # from the end: no full scan
        if message.role is Role.ASSISTANT:
            break
        if message.is_system:
            return 0
        count += 1
    return count


def replayed(sessions: Sessions, session_id: UUID, version: int) -> PreparedRequest:
    """The request the session made at `version` (before its last reply), built again: a
    client sending a request answered already (it lost the answer) gets it answered again."""
    session = sessions.session(session_id, version=version)
    return PreparedRequest(
        session_id=session_id,
        model=session.model,
        max_tokens=session.reserved_output,
        context=build_context(session, capabilities=sessions.capabilities(session.model)),
        compaction=None,
        compactions_so_far=session.generation,
    )
