"""The Messages proxy: `POST /v1/messages` and `POST /v1/messages/count_tokens`.

Each request names a session (the `x-abridged-session` header, or `metadata.user_id` and the
system prompt's fingerprint). The proxy appends what is new in the client's history to that
session (or to a branch of it when the history diverged: `abridged.adapters.http.history`),
prepares the compacted request with the service, sends it upstream with the client's own
credentials and headers, passes the answer back unchanged (streamed or not) and records the
reply with its usage. Nothing of the client's credentials is stored or logged.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import anyio
import httpx2
from starlette.background import BackgroundTask
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from abridged.adapters.anthropic.errors import too_long_counts
from abridged.adapters.http.branches import BRANCH_KEY, NAME_KEY, TENANT_KEY, parent_gone
from abridged.adapters.http.clients import (
    BodyTimeoutError,
    ClientGoneError,
    TimelyStreamingResponse,
    late_body,
    unless_gone,
    whole_answer,
)
from abridged.adapters.http.config import ServeConfig, tenant_of
from abridged.adapters.http.errors import (
    ApiError,
    error_response,
    from_session_error,
    is_count,
    unreachable,
    upstream_answer,
)
from abridged.adapters.http.history import (
    EMPTY_REPLY,
    ClientHistory,
    Parser,
    Route,
    Shape,
    StoredDigests,
    named_id,
    root_id,
    route,
    stripped,
    unknown_id,
)
from abridged.adapters.http.interrupted import (
    Prepared,
    Relayed,
    empty_reply,
    holds_last,
    replayed,
    take_back,
)
from abridged.adapters.http.locks import RequestLocks
from abridged.adapters.http.metrics import ServeMetrics
from abridged.adapters.http.sse import BROKEN_OFF, ReplyAccumulator, complete_events
from abridged.adapters.http.wire import (
    MAX_NAME_LENGTH,
    SESSION_HEADER,
    TOKEN_HEADER,
    check_messages_request,
    check_sendable,
    joined_user_turns,
    json_body,
    new_texts,
    outgoing,
    regenerates,
    response_headers,
    session_name,
    session_system,
    shape_changes,
    upstream_headers,
)
from abridged.adapters.token_counters import TiktokenCounter, counting_ahead
from abridged.application.ports import PromptTooLongError
from abridged.application.service import PreparedRequest, Sessions
from abridged.domain.errors import (
    ConcurrentWriteError,
    InvalidMessageError,
    SessionDeletedError,
    SessionError,
    SessionExistsError,
    UnknownSessionError,
)

logger = logging.getLogger(__name__)

DEFAULT_TENANT = "default"
ROUTE_ATTEMPTS = 5
ROUTES_KEPT = 4_096


class MessagesProxy:
    """The proxy's two endpoints, over one `Sessions` service and one upstream client."""

    def __init__(
        self,
        sessions: Sessions,
        config: ServeConfig,
        upstream: httpx2.AsyncClient,
        locks: RequestLocks,
        metrics: ServeMetrics,
    ) -> None:
        self.sessions = sessions
        self.config = config
        self.upstream = upstream
        self.locks = locks
        self.metrics = metrics
        self.parser = Parser()
        self.stored = StoredDigests(sessions)
        self._routes: OrderedDict[UUID, UUID] = OrderedDict()
        self._routes_lock = threading.Lock()
        self._counts_ahead = isinstance(sessions.counter, TiktokenCounter)

    # Endpoints.

    async def messages(self, request: Request) -> Response:
        try:
            tenant = self._tenant(request)
            headers = upstream_headers(request.headers)
            body = await json_body(request, self.config.max_body_bytes)
            check_messages_request(body)
            body["messages"] = joined_user_turns(body["messages"])
            check_sendable(body, skip="messages")  # the messages: as they are parsed
            name = session_name(request.headers, body)
            ready = await anyio.to_thread.run_sync(self._prepare, tenant, name, body)
        except ClientDisconnect:
            return self._abandoned("body")
        except BodyTimeoutError as late:
            self.metrics.add("abridged.serve.refused", attributes={"type": "timeout_error"})
            return late_body(late)
        except ApiError as refused:
            self.metrics.add("abridged.serve.refused", attributes={"type": refused.kind})
            return error_response(refused.status, refused.kind, refused.message)
        except Exception:
            # The store failing underneath, or a bug: the client gets the API's shape (and
            # retries a 500), the log gets the traceback (never a header).
            logger.exception("a proxied request failed before it was sent upstream")
            self.metrics.add("abridged.serve.refused", attributes={"type": "api_error"})
            return error_response(500, "api_error", "abridged: the request failed; try again")
        self.metrics.add("abridged.serve.requests", attributes={"path": "messages"})
        try:
            return await self._forward(request, headers, ready)
        except ClientGoneError:
            # Nobody reads the answer: the upstream request is closed, not waited for; what
            # the client sent since the last reply is withdrawn.
            await anyio.to_thread.run_sync(self._take_back, ready)
            return self._abandoned("upstream")

    async def count_tokens(self, request: Request) -> Response:
        """Forwarded as the client sent it: a count stores nothing."""
        try:
            self._tenant(request)
            headers = upstream_headers(request.headers)
            body = await json_body(request, self.config.max_body_bytes)
            check_sendable(body)
        except BodyTimeoutError as late:
            return late_body(late)
        except ApiError as refused:
            return error_response(refused.status, refused.kind, refused.message)
        self.metrics.add("abridged.serve.requests", attributes={"path": "count_tokens"})
        try:
            answer = await self.upstream.post(
                "/v1/messages/count_tokens",
                content=json.dumps(body, ensure_ascii=False).encode(),
                headers=headers,
            )
        except httpx2.TimeoutException:
            return error_response(504, "timeout_error", "abridged: the upstream did not answer")
        except httpx2.HTTPError as error:
            return unreachable(error)
        status, payload, _ = upstream_answer(
            answer.status_code, answer.content, is_count, answer.headers.get("request-id")
        )
        headers = response_headers(answer.headers) | {"content-type": "application/json"}
        return Response(payload, status, headers)

    # Before the upstream.

    def _tenant(self, request: Request) -> str:
        if not self.config.tokens:
            return DEFAULT_TENANT
        given = request.headers.getlist(TOKEN_HEADER)
        # Sent twice, a token could be read one way here and another by a gateway in front.
        tenant = tenant_of(given[0], self.config.tokens) if len(given) == 1 else None
        if tenant is None:
            raise ApiError(
                401, "authentication_error", f"abridged: one valid {TOKEN_HEADER} is needed"
            )
        return tenant

    def _prepare(self, tenant: str, name: str, body: dict[str, Any]) -> Prepared:
        """Appends what is new to the session (or a branch) and prepares its request."""
        # The new message's long texts are counted from now on, on the helper thread, beside
        # the parse, the digests and the reading of the session that come before their count.
        with counting_ahead(new_texts(body["messages"]) if self._counts_ahead else ()):
            return self._routed_and_prepared(tenant, name, body)

    def _routed_and_prepared(self, tenant: str, name: str, body: dict[str, Any]) -> Prepared:
        try:
            history = self.parser.parse(body["messages"])
        except InvalidMessageError as error:
            raise from_session_error(error) from None
        root = root_id(tenant, name)

        def reshaped(shape: Shape | None) -> bool:  # asked on another model, say
            return regenerates(shape, body)

        # Routed holding the lock of the session the name reached last: usually one lock, one read.
        guess = self._routes.get(root, root)
        for _ in range(ROUTE_ATTEMPTS):
            with self.locks.held(guess):
                try:
                    found = route(self.stored, root, history, {TENANT_KEY: tenant}, reshaped)
                except UnknownSessionError as error:
                    raise from_session_error(error) from None
                if not found.exists and found.session_id == named_id(name):
                    # An id names a session that exists: a client never picks the id of a
                    # new one (another tenant's names map to ids anyone can compute).
                    raise from_session_error(unknown_id(root))
                if found.session_id == guess:
                    try:
                        prepared = self._append_and_prepare(tenant, name, body, history, found)
                    except SessionExistsError:
                        continue
                    except SessionError as error:
                        raise from_session_error(error) from None
                    self._remember(root, guess)
                    sent = outgoing(body, prepared)
                    return Prepared.of(found, sent, prepared, history)
            guess = found.session_id
        # Other writers kept moving the session: a 529 (the SDKs retry), as for a conflict.
        raise from_session_error(ConcurrentWriteError("the session kept changing; try again"))

    def _remember(self, root: UUID, session_id: UUID) -> None:
        with self._routes_lock:
            self._routes[root] = session_id
            self._routes.move_to_end(root)
            if len(self._routes) > ROUTES_KEPT:
                self._routes.popitem(last=False)

    def _append_and_prepare(
        self,
        tenant: str,
        name: str,
        body: dict[str, Any],
        history: ClientHistory,
        found: Route,
    ) -> PreparedRequest:
        sessions, session_id = self.sessions, found.session_id
        if found.replay is not None:
            return replayed(sessions, session_id, found.replay)
        system, tools = session_system(body), [stripped(tool) for tool in body.get("tools") or []]
        new = history.messages[found.start :]
        if not found.exists:
            metadata = {TENANT_KEY: tenant, NAME_KEY: name[:MAX_NAME_LENGTH]}
            if found.parent is not None:
                self.stored.require(found.parent)  # erased since: a branch would store it
                metadata[BRANCH_KEY] = str(found.parent)
            # Started with the client's whole history in one write: a refused message leaves
            # no session behind (erasing one would leave its name's id refused for ever).
            # Accepted messages whose request cannot fit stay, as in a session that exists.
            sessions.start_session(
                session_id=session_id,
                model=body["model"],
                max_output_tokens=body["max_tokens"],
                context_window=self.config.context_window,
                system=system,
                tools=tools,
                settings=self.config.settings,
                metadata=metadata,
                tags=["serve"],
                messages=new,
            )
            if found.parent is not None and parent_gone(
                sessions, self.stored, session_id, found.parent
            ):
                raise SessionDeletedError(f"session {found.parent} was deleted")
            self.metrics.add(
                "abridged.serve.sessions", attributes={"kind": "branch" if found.parent else "new"}
            )
            return sessions.prepare_request(session_id)
        if found.shape is not None:  # `route` checked the tenant
            changes = shape_changes(found.shape, body, system, tools)
            if changes:
                # The changes and the messages sent with them: one write, all or nothing. The
                # client sends its top level as it stands (upstream too): the session records
                # it there, not as a system message of its own the client never holds.
                sessions.reconfigure(session_id, **changes, messages=new, top_level=True)
                return sessions.prepare_request(session_id)
        if new:
            sessions.append_messages(session_id, new)  # one write, all or nothing
        return sessions.prepare_request(session_id)

    # The upstream.

    def _abandoned(self, stage: str) -> Response:
        """What is sent to a client that went away (it reads nothing)."""
        self.metrics.add("abridged.serve.abandoned", attributes={"stage": stage})
        return Response(status_code=499)

    async def _forward(
        self, request: Request, headers: dict[str, str], ready: Prepared
    ) -> Response:
        content = json.dumps(ready.body, ensure_ascii=False).encode()
        try:
            sent = self.upstream.build_request(
                "POST", "/v1/messages", content=content, headers=headers
            )
            answer = await unless_gone(request, lambda: self.upstream.send(sent, stream=True))
        except httpx2.TimeoutException:
            self.metrics.add("abridged.serve.upstream_errors", attributes={"type": "timeout"})
            return error_response(504, "timeout_error", "abridged: the upstream did not answer")
        except httpx2.HTTPError as error:
            self.metrics.add("abridged.serve.upstream_errors", attributes={"type": "connection"})
            return unreachable(error)
        reply_headers = response_headers(answer.headers)
        reply_headers[SESSION_HEADER] = str(ready.session_id)
        streamed = answer.headers.get("content-type", "").startswith("text/event-stream")
        asked = ready.body.get("stream") is True
        if answer.status_code != 200 or not streamed or not asked:
            # A reply streamed or not against what the client asked: its SDK cannot read it
            # (or would take a stream's text for a message's); not read, never recorded.
            unasked = answer.status_code == 200 and streamed != asked
            # A reply may be as large as a request it is sent back in; an error is small.
            read = await whole_answer(request, answer, self.config.max_body_bytes, read=not unasked)
            if isinstance(read, Response):
                return read
            status, payload, parsed = upstream_answer(
                answer.status_code, read, request_id=answer.headers.get("request-id")
            )
            reply_headers["content-type"] = "application/json"
            await anyio.to_thread.run_sync(self._learn, ready, status, parsed)
            return Response(payload, status, reply_headers)
        relayed = Relayed()
        return TimelyStreamingResponse(
            self._relay(answer, ready, relayed),
            status_code=200,
            headers=reply_headers,
            background=BackgroundTask(self._after_stream, answer, ready, relayed),
            seconds=self.config.client_timeout,
        )

    async def _after_stream(
        self, answer: httpx2.Response, ready: Prepared, relayed: Relayed
    ) -> None:
        """Closes the upstream's stream (at once, for a client that left mid-stream: the rest
        of the reply is neither generated nor paid for); a stream its client left, or
        stopped reading (`--client-timeout`), takes back what the request appended."""
        await answer.aclose()
        if not relayed.ended:
            self.metrics.add("abridged.serve.abandoned", attributes={"stage": "stream"})
            await anyio.to_thread.run_sync(self._take_back, ready)

    async def _relay(
        self, answer: httpx2.Response, ready: Prepared, relayed: Relayed
    ) -> AsyncIterator[bytes]:
        accumulator = ReplyAccumulator()
        pending = bytearray()
        try:
            async for chunk in answer.aiter_bytes():
                accumulator.feed(chunk)
                searched = max(len(pending) - 3, 0)  # the end of an event may span chunks
                pending += chunk
                if accumulator.ended and not relayed.ended:
                    # Recorded before `message_stop` is passed on: a client may close the
                    # stream as soon as it reads it, before the upstream's last `ping`.
                    relayed.ended = True
                    if (reply := accumulator.message) is not None:
                        await anyio.to_thread.run_sync(self._record, ready, reply)
                if whole := complete_events(pending, searched):
                    yield bytes(pending[:whole])
                    del pending[:whole]
        except httpx2.HTTPError:
            self.metrics.add("abridged.serve.upstream_errors", attributes={"type": "stream"})
        if not accumulator.ended:
            # Passed on as it broke, the stream would end cleanly here (the proxy closes its
            # own response properly) and the client would keep half a reply as a whole one,
            # and send it back as such: it is told instead, as the API tells it.
            relayed.ended = True
            yield BROKEN_OFF
            return
        if pending:
            yield bytes(pending)

    def _learn(self, ready: Prepared, status: int, answer: Any) -> None:
        """Records a reply, or what an error teaches (an overflow compacts the session)."""
        if status == 200 and isinstance(answer, dict) and answer.get("type") == "message":
            self._record(ready, answer)
            return
        self.metrics.add("abridged.serve.upstream_errors", attributes={"type": str(status)})
        error = answer.get("error") if isinstance(answer, dict) else None
        text = error.get("message", "") if isinstance(error, dict) else ""
        figures = too_long_counts(text) if status in (400, 413) else None
        if figures is None:
            return
        tokens, maximum = figures
        with self.locks.held(ready.session_id):
            try:
                self.sessions.report_overflow(
                    ready.session_id,
                    PromptTooLongError(text, tokens=tokens, maximum=maximum),
                )
            except SessionError as failure:
                logger.warning("session %s: overflow not recovered: %s", ready.session_id, failure)

    def _record(self, ready: Prepared, reply: dict[str, Any]) -> None:
        if empty_reply(reply):
            # No request may carry it back: the client sends the turn again, in this session.
            take_back(self.sessions, self.locks, self.stored, ready, EMPTY_REPLY)
            self.metrics.add("abridged.serve.replies", attributes={"outcome": "empty"})
            return
        with self.locks.held(ready.session_id):
            known = self.stored.get(ready.session_id)
            if not holds_last(known, ready):
                # Another request on this session was answered first: its reply stands, and
                # the client's next request says which one it kept.
                self.metrics.add("abridged.serve.replies", attributes={"outcome": "superseded"})
                return
            try:
                self.sessions.record_reply(
                    ready.session_id,
                    reply,
                    request_estimate=ready.prepared.context.raw_estimate,
                )
            except SessionError as error:
                self.metrics.add("abridged.serve.replies", attributes={"outcome": "refused"})
                logger.warning("session %s: reply not recorded: %s", ready.session_id, error)
                return
        self.metrics.add("abridged.serve.replies", attributes={"outcome": "recorded"})

    def _take_back(self, ready: Prepared) -> None:
        if take_back(self.sessions, self.locks, self.stored, ready):
            self.metrics.add("abridged.serve.withdrawn", ready.unanswered)
