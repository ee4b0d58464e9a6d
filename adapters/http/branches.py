"""The proxy's branches of a session: how they are found, and how a deletion takes them with
it, a branch started while the deletion runs included.

A branch holds a copy of the history it diverged from, so deleting (or erasing) a session
deletes its branches, and theirs. A request may start a branch while that runs: it checked
its parent when it routed, and starts the branch later. Neither side waits for the other
(a deletion holding every branch's lock would hold a connection each on PostgreSQL);
instead each looks again once its own write is done. The request, once its branch is
stored, reads its parent again (`parent_gone`) and erases the branch when the parent is
gone. The deletion, once the sessions it found are deleted, lists their branches again
(`delete_with_branches`), and deletes those too. Whichever writes second sees the other's
write, so no branch outlives its parent.
"""

from __future__ import annotations

from contextlib import suppress
from uuid import UUID

from abridged.adapters.http.history import StoredDigests
from abridged.application.management import MAX_PAGE, list_sessions
from abridged.application.service import Sessions
from abridged.domain.errors import SessionError, UnknownSessionError

TENANT_KEY = "abridged:tenant"
NAME_KEY = "abridged:name"
BRANCH_KEY = "abridged:branch_of"
STARTED_IN_A_DELETION = "its parent was deleted as it started"


def listed_branches(
    sessions: Sessions, parent: UUID, tenant: str, *, deleted: bool = False
) -> list[UUID]:
    """The branches the proxy started from `parent`, newest first: those not deleted, or
    with `deleted` those deleted too (an erasure's: a deleted branch still holds its
    copy of the history)."""
    found: list[UUID] = []
    cursor = None
    wanted = {TENANT_KEY: tenant, BRANCH_KEY: str(parent)}
    while True:
        page = list_sessions(
            sessions, metadata=wanted, limit=MAX_PAGE, cursor=cursor, deleted=deleted
        )
        found.extend(info.id for info in page.sessions)
        if (cursor := page.next_cursor) is None:
            return found


def branches_of(
    sessions: Sessions, session_id: UUID, tenant: str, *, deleted: bool = False
) -> list[UUID]:
    """The proxy's branches of the session, and theirs in turn, parents first: each holds a
    copy of the history it diverged from. With `deleted`, the deleted ones too."""
    found: list[UUID] = []
    waiting = [session_id]
    while waiting:
        for branch in listed_branches(sessions, waiting.pop(0), tenant, deleted=deleted):
            if branch not in found and branch != session_id:
                found.append(branch)
                waiting.append(branch)
    return found


def delete_with_branches(
    sessions: Sessions, session_id: UUID, tenant: str, reason: str, *, erase: bool
) -> None:
    """Deletes (or erases) the session and every branch of it, the branches first (a failure
    part-way leaves the session to find them from), then those a request started from any
    of them meanwhile. An erasure takes the branches deleted already too (by an earlier
    deletion of the session, or of the branch): each still holds its copy."""
    tree = branches_of(sessions, session_id, tenant, deleted=erase)
    for branch in reversed(tree):
        _delete(sessions, branch, reason, erase)
    sessions.delete_session(session_id, reason, erase=erase)
    done = {session_id, *tree}
    deleted = [session_id, *tree]
    while deleted:
        # A branch started from a session before it was deleted is listed now; one started
        # after is erased by its request (`parent_gone`).
        late = [
            branch
            for parent in deleted
            for branch in listed_branches(sessions, parent, tenant, deleted=erase)
            if branch not in done
        ]
        deleted = []
        for branch in late:
            subtree = [branch, *branches_of(sessions, branch, tenant, deleted=erase)]
            for each in reversed(subtree):
                if each not in done:
                    _delete(sessions, each, reason, erase)
                    done.add(each)
                    deleted.append(each)


def _delete(sessions: Sessions, session_id: UUID, reason: str, erase: bool) -> None:
    with suppress(UnknownSessionError):  # erased meanwhile by the request that started it
        sessions.delete_session(session_id, reason, erase=erase)


def parent_gone(sessions: Sessions, stored: StoredDigests, branch: UUID, parent: UUID) -> bool:
    """Whether the branch just started is left without its parent (deleted or erased since
    the request routed to it); if so the branch is erased: it holds a copy of the history
    the deletion took away, and the deletion may have looked for branches before it."""
    try:
        stored.require(parent)
        known = stored.get(parent)
        gone = known is None or known.deleted is not None
    except UnknownSessionError:
        gone = True
    if gone:
        stored.forget(branch)
        try:
            _delete(sessions, branch, STARTED_IN_A_DELETION, erase=True)
        except SessionError:  # a store that cannot erase: its parent was deleted, not erased
            _delete(sessions, branch, STARTED_IN_A_DELETION, erase=False)
    return gone
