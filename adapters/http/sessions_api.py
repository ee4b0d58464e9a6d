"""The sessions API: the `Sessions` operations a host needs, as JSON over HTTP.

Every route needs `Authorization: Bearer <token>`; the token names a tenant. A session
started here is tagged with its tenant (metadata `abridged:tenant`), and a tenant sees,
lists and changes only its own: another tenant's session answers 404, as an unknown one.
The schema is at `/openapi.json` (and browsable at `/docs`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Annotated, Any, TypeVar
from uuid import UUID

import anyio
import attrs
from fastapi import APIRouter, Depends, HTTPException, Query, Request
from pydantic import BaseModel, Field, StrictInt, StrictStr

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.http.branches import TENANT_KEY, delete_with_branches
from abridged.adapters.http.config import ServeConfig, tenant_of
from abridged.application.audit import event_facts
from abridged.application.auditing import audit_session
from abridged.application.management import MAX_PAGE
from abridged.application.service import PreparedRequest, Sessions
from abridged.domain.errors import (
    ConcurrentWriteError,
    SessionError,
    StoreError,
    UnknownSessionError,
)

T = TypeVar("T")
SESSIONS_PREFIX = "/v1/sessions"
logger = logging.getLogger(__name__)


class StartSession(BaseModel):
    """`Sessions.start_session`'s arguments."""

    model: str
    max_output_tokens: int = Field(gt=0)
    context_window: int | None = Field(default=None, gt=0)
    system: str = ""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    metadata: dict[str, str] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)


class AppendMessage(BaseModel):
    """One Messages API message: `{"role": ..., "content": ...}`."""

    message: dict[str, Any]


class RecordReply(BaseModel):
    """The model's reply as the API returned it (its `usage` is read from it unless given)."""

    message: dict[str, Any]
    usage: dict[str, Any] | None = None
    request_estimate: int | None = None


class Compact(BaseModel):
    instructions: str | None = None


class Withdraw(BaseModel):
    """`Sessions.withdraw_turn`'s arguments: the messages from `position` (by default the
    last user prompt in view) to the end leave the view."""

    # Strict: a withdrawal cannot be undone, so `true`, "1" or 1.0 is refused rather than
    # read as position 1 (the service refuses a bool too).
    position: StrictInt | None = Field(default=None, ge=0)
    reason: StrictStr = Field(default="withdrawn by the host", min_length=1)


class Withdrawn(BaseModel):
    count: int
    """How many messages left the view (history keeps them)."""


class Started(BaseModel):
    id: UUID


class Position(BaseModel):
    position: int
    """The message's place in the session's history (0-based)."""


class Prepared(BaseModel):
    """The next request: `request` is the complete `POST /v1/messages` body."""

    request: dict[str, Any]
    estimate: int
    raw_estimate: int
    budget: int
    context_status: str
    needs_count: bool
    notices: list[str]
    compaction: dict[str, Any] | None


def _plain(value: Any) -> Any:
    """attrs objects, UUIDs, datetimes, mappings and tuples as JSON values."""
    if attrs.has(type(value)):
        value = attrs.asdict(value, recurse=False)
    return json.loads(json.dumps(value, default=_default))


def _default(value: Any) -> Any:
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)
    if isinstance(value, tuple | frozenset | set):
        return list(value)
    if hasattr(value, "items"):
        return dict(value.items())
    return str(value)


def _tenant(request: Request) -> str:
    """The tenant of the request's bearer token (`config.tokens` of the application)."""
    config: ServeConfig = request.app.state.config
    sent = request.headers.getlist("authorization")
    scheme, _, given = sent[0].partition(" ") if len(sent) == 1 else ("", "", "")
    tenant = tenant_of(given, config.tokens) if scheme.lower() == "bearer" else None
    if tenant is not None:
        return tenant
    raise HTTPException(401, "a valid bearer token is needed", {"WWW-Authenticate": "Bearer"})


Tenant = Annotated[str, Depends(_tenant)]


# One closure per route is how FastAPI binds routes to the service they serve.
def sessions_router(sessions: Sessions) -> APIRouter:  # noqa: PLR0915
    """The `/v1/sessions` routes over `sessions`, for the tenants of the application's
    `config.tokens` (`app.state.config`)."""
    router = APIRouter(prefix=SESSIONS_PREFIX, tags=["sessions"])

    async def call(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return await anyio.to_thread.run_sync(lambda: function(*args, **kwargs))
        except UnknownSessionError as error:
            raise HTTPException(404, str(error)) from None
        except ConcurrentWriteError as error:
            raise HTTPException(409, str(error)) from None
        except StoreError as error:
            # The store's host and user are the operator's to read, not a tenant's.
            logger.warning("sessions API: %s", error)
            raise HTTPException(503, "the session store failed; try again") from None
        except SessionError as error:
            raise HTTPException(422, f"{type(error).__name__}: {error}") from None

    def owned(session_id: UUID, tenant: str, *, deleted_too: bool = False) -> None:
        """Raises 404 unless the session is the tenant's (another tenant's is not revealed);
        `deleted_too` accepts one deleted already (it may still be erased).

        Whatever the reason, the answer is the same: ids of named sessions can be computed,
        and "was deleted: <reason>" would tell any tenant which names another one used,
        and why it deleted them."""
        unknown = UnknownSessionError(f"no session with id {session_id}")
        try:
            # Its start says whose it is, deleted or not.
            session = sessions.session(session_id, version=1 if deleted_too else None)
        except UnknownSessionError:
            raise unknown from None
        if session.metadata.get(TENANT_KEY) != tenant:
            raise unknown

    @router.post("", status_code=201, response_model=Started)
    async def start(body: StartSession, tenant: Tenant) -> Started:
        if any(key.startswith("abridged:") for key in body.metadata):
            raise HTTPException(422, "metadata keys starting with 'abridged:' are reserved")
        session_id = await call(
            sessions.start_session,
            model=body.model,
            max_output_tokens=body.max_output_tokens,
            context_window=body.context_window,
            system=body.system,
            tools=body.tools,
            metadata={**body.metadata, TENANT_KEY: tenant},
            tags=body.tags,
        )
        return Started(id=session_id)

    @router.get("")
    async def list_sessions(
        tenant: Tenant,
        tag: Annotated[list[str] | None, Query()] = None,
        limit: Annotated[int, Query(gt=0, le=MAX_PAGE)] = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """The tenant's sessions, newest first; `next_cursor` fetches the next page."""
        page = await call(
            sessions.list_sessions,
            metadata={TENANT_KEY: tenant},
            tags=tag or (),
            limit=limit,
            cursor=cursor,
        )
        return {
            "sessions": [_plain(info) for info in page.sessions],
            "next_cursor": page.next_cursor,
        }

    @router.post("/{session_id}/messages", status_code=201, response_model=Position)
    async def append(session_id: UUID, body: AppendMessage, tenant: Tenant) -> Position:
        await call(owned, session_id, tenant)
        return Position(position=await call(sessions.append_message, session_id, body.message))

    @router.post("/{session_id}/prepare", response_model=Prepared)
    async def prepare(session_id: UUID, tenant: Tenant) -> Prepared:
        """Prepares the next request (compacting first when due) and returns its body."""
        await call(owned, session_id, tenant)
        prepared: PreparedRequest = await call(sessions.prepare_request, session_id)
        context = prepared.context
        return Prepared(
            request=render_request(context, model=prepared.model, max_tokens=prepared.max_tokens),
            estimate=context.estimate,
            raw_estimate=context.raw_estimate,
            budget=context.budget,
            context_status=prepared.context_status,
            needs_count=prepared.needs_count,
            notices=[notice.text for notice in prepared.notices],
            compaction=_plain(prepared.compaction) if prepared.compaction else None,
        )

    @router.post("/{session_id}/replies", status_code=201, response_model=Position)
    async def record_reply(session_id: UUID, body: RecordReply, tenant: Tenant) -> Position:
        await call(owned, session_id, tenant)
        position = await call(
            sessions.record_reply,
            session_id,
            body.message,
            body.usage,
            request_estimate=body.request_estimate,
        )
        return Position(position=position)

    @router.post("/{session_id}/compact")
    async def compact(session_id: UUID, body: Compact, tenant: Tenant) -> dict[str, Any]:
        """Compacts now (`/compact`); 422 when there is nothing to compact."""
        await call(owned, session_id, tenant)
        return dict(_plain(await call(sessions.compact, session_id, body.instructions)))

    @router.post("/{session_id}/withdraw", response_model=Withdrawn)
    async def withdraw(session_id: UUID, body: Withdraw, tenant: Tenant) -> Withdrawn:
        """Takes the end of the conversation out of the view (a refused turn, an edited
        prompt); 422 when the retained tail does not hold that message."""
        await call(owned, session_id, tenant)
        count = await call(
            sessions.withdraw_turn, session_id, position=body.position, reason=body.reason
        )
        return Withdrawn(count=count)

    @router.get("/{session_id}/stats")
    async def stats(session_id: UUID, tenant: Tenant) -> dict[str, Any]:
        await call(owned, session_id, tenant)
        return dict(_plain(await call(sessions.stats, session_id)))

    @router.get("/{session_id}/compactions")
    async def compactions(session_id: UUID, tenant: Tenant) -> list[Any]:
        await call(owned, session_id, tenant)
        return [_plain(record) for record in await call(sessions.compactions, session_id)]

    @router.get("/{session_id}/history")
    async def history(session_id: UUID, tenant: Tenant) -> list[Any]:
        """Every event of the session, oldest first, with the facts it records."""
        await call(owned, session_id, tenant)
        events = await call(sessions.history, session_id)
        return [_plain(event_facts(event)) for event in events]

    @router.get("/{session_id}/audit")
    async def audit(session_id: UUID, tenant: Tenant) -> dict[str, Any]:
        """Every recorded decision re-derived from the events; `ok` when all match."""
        await call(owned, session_id, tenant)
        result = await call(audit_session, sessions, session_id)
        return {
            "session_id": str(session_id),
            "ok": result.ok,
            "events": result.events,
            "mismatches": [_plain(finding) for finding in result.mismatches],
            "compactions": [_plain(line) for line in result.compactions],
        }

    @router.delete("/{session_id}", status_code=204)
    async def delete(
        session_id: UUID, tenant: Tenant, reason: str = "deleted", erase: bool = False
    ) -> None:
        """Deletes the session (a `Deleted` event), or with `erase` removes its events; the
        same for the branches the proxy started from it, which hold copies of its history.
        A session deleted already may be erased."""
        await call(owned, session_id, tenant, deleted_too=erase)
        await call(delete_with_branches, sessions, session_id, tenant, reason, erase=erase)

    return router
