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
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from uuid import UUID, uuid5

import attrs

from abridged.adapters.http.digests import chain, message_digest
from abridged.application.inputs import PLAIN_DEPTH, as_message
from abridged.application.loading import still_stored
from abridged.application.service import Sessions
from abridged.domain.errors import (
    SessionDeletedError,
    UnencodableContentError,
    UnknownSessionError,
)
from abridged.domain.events import Deleted, MessageAppended, Started
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


def named_id(name: str) -> UUID | None:
    """The session id a name is, when it is one (a session of the tenant's to carry on): a
    UUID as the sessions API writes it, hyphenated. 32 hex digits (a digest), braces or a
    `urn:uuid:` prefix are names, as the docs say (UUID() would read them as ids)."""
    return UUID(name) if _HYPHENATED_UUID.fullmatch(name) else None


_HYPHENATED_UUID = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", re.ASCII)


def unknown_id(session_id: UUID) -> UnknownSessionError:
    """The error for a UUID name that is none of the tenant's sessions (unknown, or another
    tenant's: the same words for both), saying how to name a new conversation instead."""
    return UnknownSessionError(
        f"no session {session_id}: a UUID in x-abridged-session names one of your sessions "
        f"by its id; to name a new conversation by an id of your own, give it a prefix "
        f"(x-abridged-session: conv-{session_id})"
    )


def root_id(tenant: str, name: str) -> UUID:
    """The id of the session a name starts with: a UUID name is taken as it is, any other
    name is mapped to an id in the tenant's namespace."""
    return named_id(name) or uuid5(NAMESPACE, f"{tenant}\n{name}")


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
"""The memory a worker's parsed messages may hold, each weighed as the size of its JSON
plus `PARSED_ENTRY_BYTES`: a conversation's earlier messages are parsed once, and neither
a few huge messages nor millions of small ones can take all the memory."""
PARSED_ENTRY_BYTES = 640
"""What one parsed message holds beside its text: the `Message`, its blocks, its digest,
the cache's key and entry (530 to 580 bytes measured on CPython 3.11). Weighed by its text
alone, a short message counted an eighth of its memory, and the cache's 256 MB held 2 GB."""


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
        for index, raw in enumerate(messages):
            try:
                fingerprint = raw_fingerprint(raw)
            except UnicodeEncodeError:
                raise UnencodableContentError(
                    f"message {index} holds a lone surrogate (U+D800 to U+DFFF), which is not UTF-8"
                ) from None
            if fingerprint is None:
                raise UnencodableContentError(
                    f"message {index} is nested more than {PLAIN_DEPTH} levels deep"
                )
            key, size = fingerprint
            with self._lock:
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
            if hit is None:
                message = as_message(stripped(raw))
                hit = (message, message_digest(message), size + PARSED_ENTRY_BYTES)
                with self._lock:
                    if key not in self._cache:
                        self._cache[key] = hit
                        self._bytes += hit[2]
                    while self._bytes > self._budget and self._cache:
                        self._bytes -= self._cache.popitem(last=False)[1][2]
            parsed.append(hit[0])
            digests.append(hit[1])
        return ClientHistory(parsed, digests)


def raw_fingerprint(raw: Any) -> tuple[str, int] | None:
    """A digest of a JSON value as a request carried it, and about its size in bytes,
    without encoding it as JSON again (escaping 1 MB of text took longer than hashing it);
    `None` past `PLAIN_DEPTH` levels. Each value is framed with its type and length, so two
    different values never feed the digest the same bytes."""
    digest = hashlib.sha256()
    size = _feed(digest, raw, 0)
    return None if size is None else (digest.hexdigest(), size)


def _feed(digest: Any, value: Any, depth: int) -> int | None:
    if depth > PLAIN_DEPTH:
        return None
    if isinstance(value, str):
        data = value.encode("utf-8")  # a lone surrogate: `UnicodeEncodeError`
        digest.update(b"s%d:" % len(data))
        digest.update(data)
        return len(data)
    if isinstance(value, dict | list):
        items = [x for pair in value.items() for x in pair] if isinstance(value, dict) else value
        digest.update(b"%c%d:" % (ord("d") if isinstance(value, dict) else ord("l"), len(items)))
        size = len(items) + 2
        for item in items:
            fed = _feed(digest, item, depth + 1)
            if fed is None:
                return None
            size += fed
        return size
    # true, false, null and numbers, as JSON writes them (1, 1.0 and true differ): this is
    # the key of a parse, and a message is stored as its client spelled it. Routing compares
    # numbers as the doubles they are (`message_digest`).
    data = json.dumps(value).encode()
    digest.update(b"v%d:" % len(data))
    digest.update(data)
    return len(data)


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
    shape_bytes: int = attrs.field(default=0, eq=False)
    """About the memory `shape` holds (its system prompt and tools)."""
    deleted: str | None = None
    """The reason the session was deleted with, if it was."""

    @property
    def weight(self) -> int:
        """About the memory this holds, for `StoredDigests`'s budget."""
        return STORED_BASE_BYTES + len(self.digests) * STORED_MESSAGE_BYTES + self.shape_bytes


STORED_BYTES_KEPT = 128 * 1024 * 1024
"""The memory a worker's `StoredDigests` may hold, each session weighed by `Stored.weight`."""
STORED_SESSIONS_KEPT = 4_096
"""And how many sessions at most."""
STORED_BASE_BYTES = 1_024
"""What a session's entry holds besides its messages' digests and its shape."""
STORED_MESSAGE_BYTES = 170
"""What a stored message's digest and version hold (a 64-character string, an int, two
tuple slots: 161 bytes measured on CPython 3.11). By sessions alone, 4,096 sessions of
agent harnesses (thousands of messages, a 20 KB system prompt, 50 KB of tools) held over
a gigabyte."""


@attrs.frozen
class Shape:
    """What of a session a request sets besides its messages."""

    model: str
    reserved_output: int
    system: str
    tools: tuple[Any, ...]


class StoredDigests:
    """The digests of each session's stored messages, read from its events once per worker
    and fast-forwarded with the events written since: those this worker saves as it saves
    them (`Sessions.on_saved`), those of other workers read from the store."""

    def __init__(
        self,
        sessions: Sessions,
        cache_size: int = STORED_SESSIONS_KEPT,
        bytes_kept: int = STORED_BYTES_KEPT,
    ) -> None:
        self._sessions = sessions
        self._cache: OrderedDict[UUID, Stored] = OrderedDict()
        self._size = cache_size
        self._budget = bytes_kept
        self._bytes = 0
        self._lock = threading.Lock()
        sessions.on_saved(self.saved)

    def get(self, session_id: UUID) -> Stored | None:
        """The session's digests as stored now; `None` when no such session exists."""
        with self._lock:
            known = self._cache.get(session_id)
        version = known.version if known else 0
        events = list(self._sessions.events.get(session_id, gt=version or None))
        if not events and known is None:
            return None
        stored = _advanced(known, events)
        self._keep(session_id, stored)
        return stored

    def saved(self, events: Sequence[object]) -> None:
        """Fast-forwards the sessions whose events this worker just saved: the next request
        does not read back (and decode) what its own worker wrote, a 1 MB message included.
        A session not known here, or known at a version these events do not follow, is left
        to `get`, which reads the store."""
        by_session: dict[UUID, list[Any]] = {}
        for event in events:
            originator = getattr(event, "originator_id", None)
            if isinstance(originator, UUID):
                by_session.setdefault(originator, []).append(event)
        for session_id, new in by_session.items():
            with self._lock:
                known = self._cache.get(session_id)
            after = known.version if known else 0
            if new[0].originator_version != after + 1:
                continue
            self._keep(session_id, _advanced(known, new))

    def _keep(self, session_id: UUID, stored: Stored) -> None:
        with self._lock:
            current = self._cache.get(session_id)
            if current is not None and current.version > stored.version:
                return  # another thread brought it further meanwhile
            self._bytes += stored.weight - (current.weight if current is not None else 0)
            self._cache[session_id] = stored
            self._cache.move_to_end(session_id)
            while len(self._cache) > 1 and (
                len(self._cache) > self._size or self._bytes > self._budget
            ):
                self._bytes -= self._cache.popitem(last=False)[1].weight

    def require(self, session_id: UUID) -> None:
        """Raises `UnknownSessionError` (and forgets it here) if a session known here was
        erased since, by any worker: its events are no longer in the store. One read of its
        first event; `get` cannot tell, since a session known here with no new events reads
        the same as one erased."""
        if not still_stored(self._sessions.recorder, session_id):
            self.forget(session_id)
            raise UnknownSessionError(f"no session with id {session_id}")

    def forget(self, session_id: UUID) -> None:
        with self._lock:
            forgotten = self._cache.pop(session_id, None)
            if forgotten is not None:
                self._bytes -= forgotten.weight


ABANDONED = "the client went away before its reply: an interrupted request"
"""The reason of the withdrawals the proxy records for a client that left (see
`abridged.adapters.http.proxy`). Messages a host withdraws stay in the digests a request is
routed by (the client still sends them: docs/serving.md); these do not, since the client that
left may send its next request with them, changed, or without them."""

EMPTY_REPLY = "the model's reply was empty: the turn is the client's to send again"
"""The reason the proxy withdraws a turn the model answered with nothing: the API refuses an
empty reply in a request, and its advice is to send the turn again with a "Please continue"
joined to it, which routing then appends as it does an interrupted request's."""
WITHDRAWN_BY_PROXY = frozenset({ABANDONED, EMPTY_REPLY})

RESHAPING = Session.SystemPromptChanged | Session.ToolsChanged
"""The events after which a shape's size is taken again."""


def _advanced(known: Stored | None, events: Sequence[Any]) -> Stored:
    """`known` (nothing, for `None`) with `events`, the session's next ones, applied."""
    version = known.version if known else 0
    digests = list(known.digests) if known else []
    versions = list(known.versions) if known else []
    metadata = dict(known.metadata) if known else {}
    shape = known.shape if known else None
    shape_bytes = known.shape_bytes if known else 0
    deleted = known.deleted if known else None
    for event in events:
        if isinstance(event, MessageAppended):
            digests.append(message_digest(event.message))
            versions.append(event.originator_version)
        elif isinstance(event, Session.TurnWithdrawn) and event.reason in WITHDRAWN_BY_PROXY:
            # Messages whose client went away before their reply: the client's next request
            # may send them again, or not (routing never counts them as held).
            del digests[len(digests) - event.count :]
            del versions[len(versions) - event.count :]
        elif isinstance(event, Started):
            metadata = dict(event.metadata)
            shape = Shape(event.model, event.reserved_output, event.system, tuple(event.tools))
        elif isinstance(event, Deleted):
            deleted = event.reason
        elif shape is not None and isinstance(event, Session.SystemPromptChanged):
            shape = attrs.evolve(shape, system=event.system)
        elif shape is not None and isinstance(event, Session.ToolsChanged):
            shape = attrs.evolve(shape, tools=tuple(event.tools))
        elif shape is not None and isinstance(event, Session.ModelChanged):
            shape = attrs.evolve(shape, model=event.model, reserved_output=event.reserved_output)
        if shape is not None and isinstance(event, Started | RESHAPING):
            # Tools as Python dicts hold about twice their JSON (measured).
            shape_bytes = len(shape.system) + 2 * len(json.dumps(shape.tools, default=str))
        version = event.originator_version
    return Stored(version, tuple(digests), tuple(versions), metadata, shape, shape_bytes, deleted)


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


MAX_HOPS = 1_024
"""How many branches deep, one inside another, a conversation may go (each edit, rewind or
client-side compaction is one): routing follows them all on each request, so it is bounded,
but well past what a long-lived session reaches (64 had a real one refused for good)."""


def route(
    stored: StoredDigests,
    root: UUID,
    history: ClientHistory,
    owner: Mapping[str, str],
    reshaped: Callable[[Shape | None], bool] = lambda shape: False,
) -> Route:
    """The session for `history`, starting from the name's `root` and following branches
    at each point of divergence. A session whose metadata does not have every `owner` item
    (another tenant's) is unknown: `UnknownSessionError`; a deleted one of the owner's is
    `SessionDeletedError` (its recorded replies are not sent again either).

    The same request again, whose reply is recorded, is sent again as it was, unless the
    request changes what the session was asked with (`reshaped`: another model, say, to
    regenerate the reply on): that goes to a branch of its own, started with the history."""
    session_id, parent = root, None
    known = stored.get(session_id)
    for _ in range(MAX_HOPS):
        if known is None:
            return Route(session_id, 0, False, parent, 0)
        if any(known.metadata.get(key, "") != value for key, value in owner.items()):
            raise unknown_id(root)
        if known.deleted is not None:
            raise SessionDeletedError(f"session {session_id} was deleted: {known.deleted}")
        common = _common_prefix(known.digests, history.digests)
        if common == len(known.digests):
            return Route(session_id, common, True, parent, len(known.digests), known.shape)
        again = common == len(history) and len(known.digests) == common + 1
        if again and not reshaped(known.shape):
            # The same request again, answered and recorded already (a client that lost the
            # answer, or several sending at once): the same request goes again.
            before = known.versions[common] - 1
            return Route(session_id, common, True, parent, len(known.digests), known.shape, before)
        # Diverged: the client's message at `common` differs, or the client has fewer (or
        # the same as the request the session answered, asked on another model, say).
        if common < len(history):
            branch = branch_id(session_id, chain(history.digests[: common + 1]))
            following = stored.get(branch)
            if following is None:
                # The reply to these `common` messages regenerated on another model (or
                # system prompt) went to their ":end" branch: the client went on from it.
                end = branch_id(session_id, chain(history.digests[:common]) + ":end")
                regenerated = stored.get(end)
                if regenerated is not None and _goes_on(regenerated, history, common):
                    branch, following = end, regenerated
        else:
            branch = branch_id(session_id, chain(history.digests) + ":end")
            following = stored.get(branch)
        session_id, parent, known = branch, session_id, following
    raise UnknownSessionError(f"more than {MAX_HOPS} branches deep from session {root}")


def _goes_on(regenerated: Stored, history: ClientHistory, common: int) -> bool:
    """Whether the client's history goes on from the reply the ":end" branch holds."""
    reply = regenerated.digests[common : common + 1]
    return regenerated.deleted is None and reply == history.digests[common : common + 1]


def _common_prefix(left: Sequence[str], right: Sequence[str]) -> int:
    count = 0
    for a, b in zip(left, right, strict=False):
        if a != b:
            break
        count += 1
    return count
