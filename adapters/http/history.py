"""What a proxied request's history is, compared with what a session has stored.

A Messages client sends its whole conversation with every request. The proxy keeps one
digest per stored message (of the message as abridged reads it back: `Message.to_wire`, so
a reply the proxy recorded from the wire and the same reply as the client's SDK re-sends it
compare equal) and finds, for each request, the session whose stored messages are a prefix
of the client's: new messages are appended there. A client whose history differs (edited,
rewound, another branch) is routed to a *branch* session named by the point where it
diverged, so the same divergence always reaches the same branch, in every worker.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID, uuid5

import attrs

from abridged.application.inputs import as_message
from abridged.application.service import Sessions
from abridged.domain.errors import UnknownSessionError
from abridged.domain.events import MessageAppended, Started
from abridged.domain.messages import Message
from abridged.domain.session import Session

NAMESPACE = UUID("5b0b7c1e-3f0e-5d43-9c51-6a1d2f0e8a77")
"""The uuid5 namespace of session ids the proxy derives from names."""


def stripped(value: Any) -> Any:
    """`value` without any `cache_control` field, at any depth: where a client puts its cache
    breakpoints changes from request to request and is not part of the conversation."""
    if isinstance(value, Mapping):
        return {k: stripped(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [stripped(item) for item in value]
    return value


def _without_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def message_digest(message: Message) -> str:
    """The digest of a message as abridged stores and sends it. A field set to null counts
    as absent: an SDK writes back a reply's optional fields as nulls the API left out."""
    wire = json.dumps(_without_nulls(message.to_wire()), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(wire.encode()).hexdigest()


def chain(digests: Sequence[str]) -> str:
    """One digest for a sequence of message digests (a history prefix)."""
    return hashlib.sha256("".join(digests).encode()).hexdigest()


def root_id(tenant: str, name: str) -> UUID:
    """The id of the session a name starts with: a UUID name is taken as it is, any other
    name is mapped to an id in the tenant's namespace."""
    try:
        return UUID(name)
    except ValueError:
        return uuid5(NAMESPACE, f"{tenant}\n{name}")


def branch_id(parent: UUID, diverged_at: str) -> UUID:
    """The id of the branch of `parent` whose history first differs as `diverged_at` says."""
    return uuid5(NAMESPACE, f"branch\n{parent}\n{diverged_at}")


class ClientHistory:
    """A request's messages, parsed, with a digest each (parsing is cached by the raw
    message, so a long conversation's earlier messages are parsed once per worker)."""

    def __init__(self, messages: Sequence[Message], digests: Sequence[str]) -> None:
        self.messages = tuple(messages)
        self.digests = tuple(digests)

    def __len__(self) -> int:
        return len(self.messages)


PARSED_BYTES_KEPT = 256 * 1024 * 1024
"""The parsed messages a worker keeps, by the size of their JSON: a conversation's earlier
messages are parsed once, and a few huge ones cannot take all the memory."""


class Parser:
    """Parses a client's messages into `Message`s; `InvalidMessageError` for a bad one."""

    def __init__(self, bytes_kept: int = PARSED_BYTES_KEPT) -> None:
        self._cache: OrderedDict[str, tuple[Message, str, int]] = OrderedDict()
        self._bytes = 0
        self._budget = bytes_kept
        self._lock = threading.Lock()

    def parse(self, messages: Sequence[Any]) -> ClientHistory:
        parsed: list[Message] = []
        digests: list[str] = []
        for raw in messages:
            encoded = json.dumps(raw, ensure_ascii=False, separators=(",", ":")).encode()
            key = hashlib.sha256(encoded).hexdigest()
            with self._lock:
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
            if hit is None:
                message = as_message(stripped(raw))
                hit = (message, message_digest(message), len(encoded))
                with self._lock:
                    if key not in self._cache:
                        self._cache[key] = hit
                        self._bytes += hit[2]
                    while self._bytes > self._budget and self._cache:
                        self._bytes -= self._cache.popitem(last=False)[1][2]
            parsed.append(hit[0])
            digests.append(hit[1])
        return ClientHistory(parsed, digests)


@attrs.frozen
class Stored:
    """What a session has stored: its digests in history order, up to `version`."""

    version: int
    digests: tuple[str, ...]
    versions: tuple[int, ...] = ()
    """The version of each message's event."""
    metadata: Mapping[str, str] = attrs.field(factory=dict)
    """The metadata the session was started with (its tenant, for one)."""
    shape: Shape | None = None
    """The model, output reservation, system prompt and tools it has now."""


@attrs.frozen
class Shape:
    """What of a session a request sets besides its messages."""

    model: str
    reserved_output: int
    system: str
    tools: tuple[Any, ...]


class StoredDigests:
    """The digests of each session's stored messages, read from its events once per worker
    and fast-forwarded with the events written since (by this worker or another)."""

    def __init__(self, sessions: Sessions, cache_size: int = 4_096) -> None:
        self._sessions = sessions
        self._cache: OrderedDict[UUID, Stored] = OrderedDict()
        self._size = cache_size
        self._lock = threading.Lock()

    def get(self, session_id: UUID) -> Stored | None:
        """The session's digests as stored now; `None` when no such session exists."""
        with self._lock:
            known = self._cache.get(session_id)
        version = known.version if known else 0
        digests = list(known.digests) if known else []
        versions = list(known.versions) if known else []
        metadata = dict(known.metadata) if known else {}
        shape = known.shape if known else None
        events = list(self._sessions.events.get(session_id, gt=version or None))
        if not events and known is None:
            return None
        for event in events:
            if isinstance(event, MessageAppended):
                digests.append(message_digest(event.message))
                versions.append(event.originator_version)
            elif isinstance(event, Started):
                metadata = dict(event.metadata)
                tools = tuple(event.tools)
                shape = Shape(event.model, event.reserved_output, event.system, tools)
            elif shape is not None and isinstance(event, Session.SystemPromptChanged):
                shape = attrs.evolve(shape, system=event.system)
            elif shape is not None and isinstance(event, Session.ToolsChanged):
                shape = attrs.evolve(shape, tools=tuple(event.tools))
            elif shape is not None and isinstance(event, Session.ModelChanged):
                shape = attrs.evolve(
                    shape, model=event.model, reserved_output=event.reserved_output
                )
            version = event.originator_version
        stored = Stored(version, tuple(digests), tuple(versions), metadata, shape)
        with self._lock:
            self._cache[session_id] = stored
            self._cache.move_to_end(session_id)
            if len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return stored

    def forget(self, session_id: UUID) -> None:
        with self._lock:
            self._cache.pop(session_id, None)


@attrs.frozen
class Route:
    """Where a request's history goes: `session_id`, appending the client's messages from
    `start` on (`start == len(history)`: nothing new, a retried request); `exists` is false
    for a session to start, as a branch of `parent` when that is set."""

    session_id: UUID
    start: int
    exists: bool
    parent: UUID | None
    stored: int
    """How many messages the session held when the route was taken."""
    shape: Shape | None = None
    replay: int | None = None
    """For a request sent again whose reply is recorded already: the session's version
    before that reply, whose request is sent again (no branch, nothing appended)."""


MAX_HOPS = 64


def route(
    stored: StoredDigests, root: UUID, history: ClientHistory, owner: Mapping[str, str]
) -> Route:
    """The session for `history`, starting from the name's `root` and following branches
    at each point of divergence. A session whose metadata does not have every `owner` item
    (another tenant's) is unknown: `UnknownSessionError`."""
    session_id, parent = root, None
    for _ in range(MAX_HOPS):
        known = stored.get(session_id)
        if known is None:
            return Route(session_id, 0, False, parent, 0)
        if any(known.metadata.get(key, "") != value for key, value in owner.items()):
            raise UnknownSessionError(f"no session {root}")
        common = _common_prefix(known.digests, history.digests)
        if common == len(known.digests):
            return Route(session_id, common, True, parent, len(known.digests), known.shape)
        if common == len(history) and len(known.digests) == common + 1:
            # The same request again, answered and recorded already (a client that lost the
            # answer, or several sending at once): the same request goes again.
            before = known.versions[common] - 1
            return Route(session_id, common, True, parent, len(known.digests), known.shape, before)
        # Diverged: the client's message at `common` differs, or the client has fewer.
        if common < len(history):
            point = chain(history.digests[: common + 1])
        else:
            point = chain(history.digests) + ":end"
        session_id, parent = branch_id(session_id, point), session_id
    raise UnknownSessionError(f"more than {MAX_HOPS} branches deep from session {root}")


def _common_prefix(left: Sequence[str], right: Sequence[str]) -> int:
    count = 0
    for a, b in zip(left, right, strict=False):
        if a != b:
            break
        count += 1
    return count
