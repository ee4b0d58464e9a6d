"""Erasing sessions: their stored events and snapshots removed, under their locks.

`erase_sessions` is the command behind `delete_session(..., erase=True)`: for the session and, with
`cascade`, the sessions started from it (which hold copies of its content), it waits for a
compaction of it to finish and for this process's commands on it, removes its rows through
the host's `EventEraser`, and drops the cached copy. The store's tombstone refuses any later
write of it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from uuid import UUID

from abridged.application.inputs import as_session_id, encodable
from abridged.application.ports import EventEraser
from abridged.application.unit_of_work import UnitOfWork
from abridged.domain.errors import SessionError

__all__ = ["DeleteCommands", "erase_sessions"]

logger = logging.getLogger(__name__)


def erase_sessions(
    uow: UnitOfWork,
    erase_events: EventEraser | None,
    session_id: UUID,
    reason: str,
    derived: Callable[[UUID], Sequence[UUID]] | None,
) -> tuple[UUID, ...]:
    """Erases the session and the sessions `derived` from it (those first); the ids erased."""
    if erase_events is None:
        raise SessionError("this service cannot erase events: pass erase_events=")
    uow.history(session_id)  # an unknown id is an error; a deleted session may be erased
    targets = (*(derived(session_id) if derived is not None else ()), session_id)
    for target in targets:
        # A compaction of it (this process's, or on PostgreSQL any process's) finishes
        # first, and no command of this process is between its load and its save; a
        # command that saves after this is refused by the store's tombstone.
        with uow.compaction_lock(target), uow.command_locks.held(target):
            rows = erase_events(uow.recorders, target)
            uow.loader.evict(target)  # a cached copy would outlive its events
        logger.info("session %s erased (%d stored rows): %s", target, rows, reason)
    return targets


class DeleteCommands:
    """The service's commands that delete or erase a session (mixed into `Sessions`)."""

    uow: UnitOfWork
    erase_events: EventEraser | None
    derived_sessions: Callable[[UUID], tuple[UUID, ...]]

    def delete_session(
        self,
        session_id: UUID | str,
        reason: str = "deleted",
        *,
        erase: bool = False,
        cascade: bool = True,
    ) -> tuple[UUID, ...]:
        """Deletes the session: a `Deleted` event is recorded, after which every command and
        `session()` raise `SessionDeletedError` and `list_sessions` skips it. Its events stay
        in the store (`history` still reads them). Returns the ids deleted.

        With `erase`, the session's stored events and snapshots are removed from the store
        instead (SQLite and PostgreSQL; a session already deleted may be erased later), under
        the session's command and compaction locks, and the store refuses any later write of
        it (`SessionErasedError` for a command that loaded it before). With `cascade` (the
        default) the sessions `clear_session` / `resume_session` started from it, which hold
        copies of its content, are erased too (`derived_sessions` lists them first). On a
        store that cannot erase, `SessionError` and nothing changes. See docs/security.md,
        "Erasure"."""
        session_id = as_session_id(session_id)
        if not isinstance(reason, str) or not reason.strip():
            raise SessionError("a deletion needs a reason (a non-blank string)")
        encodable(reason, "reason")
        if erase:
            derived = self.derived_sessions if cascade else None
            return erase_sessions(self.uow, self.erase_events, session_id, reason, derived)

        def command() -> None:
            session = self.uow.load(session_id)
            session.delete(reason)
            self.uow.save(session)

        self.uow.run(session_id, command)
        logger.info("session %s deleted: %s", session_id, reason)
        return (session_id,)
