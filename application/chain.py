"""A tamper-evident history: each stored event carries a hash chained to its session's
previous event, and the host's correlation id when it gave one.

The hash is computed when the event is stored, over exactly what is stored: the previous
event's hash, the session id, the version, the topic and the event's encoded state. It is
kept in that state, as its last key (`"_chain"`), so the store's tables are unchanged and a
store from before keeps loading. `verify_chain` recomputes every hash in order and names
the first event whose stored form does not match: an event altered (any field, the message
text, the topic), deleted, inserted or moved, or a hash removed.

The chain is not keyed: whoever can rewrite the store *and* recompute every later hash can
hide a change. A host that needs more records `ChainVerdict.head` (the hash of the last
event) elsewhere, or stores with a cipher (docs/security.md). Snapshots are not chained:
they are derived, and an audit replays the events.

The domain never sees any of this: the mapper adds the hash on the way to the store and
removes it on the way back.
"""

from __future__ import annotations

import contextvars
import hashlib
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import attrs
from eventsourcing.domain import Snapshot
from eventsourcing.persistence import (
    Cipher,
    Compressor,
    Mapper,
    StoredEvent,
    Transcoder,
)
from eventsourcing.utils import get_topic

from abridged.application.transcodings import encode_state
from abridged.domain.errors import InvalidArgumentError

__all__ = [
    "CHAIN_KEY",
    "CORRELATION_KEY",
    "ChainVerdict",
    "ChainingMapper",
    "correlation",
    "verify_chain",
]

CHAIN_KEY = "_chain"
CORRELATION_KEY = "correlation_id"
"""The event state key a host's correlation id is stored under (an attribute of the events
read back; absent when none was given)."""
MAX_CORRELATION_CHARS = 256

_SEALED = re.compile(rb'(,?)"' + CHAIN_KEY.encode() + rb'":"([0-9a-f]{64})"\}\Z')
_current: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "abridged_correlation_id", default=None
)


@contextmanager
def correlation(correlation_id: str | None) -> Iterator[None]:
    """Every event stored inside the block (in this thread or task) records `correlation_id`;
    `None` records none. Raises `InvalidArgumentError` for a blank or over-long id."""
    if correlation_id is not None and (
        not isinstance(correlation_id, str)
        or not correlation_id.strip()
        or len(correlation_id) > MAX_CORRELATION_CHARS
        or not correlation_id.isprintable()
    ):
        raise InvalidArgumentError(
            f"a correlation id is a non-blank printable string of at most "
            f"{MAX_CORRELATION_CHARS} characters, got {correlation_id!r:.80}"
        )
    token = _current.set(correlation_id)
    try:
        yield
    finally:
        _current.reset(token)


def current_correlation() -> str | None:
    """The correlation id of the enclosing `correlation` block, if any."""
    return _current.get()


def link(previous: str, originator_id: object, version: int, topic: str, body: bytes) -> str:
    """The hash of one stored event: its predecessor's hash ("" for none), where it is, what
    it is, and its encoded state."""
    digest = hashlib.sha256()
    for part in (previous, str(originator_id), str(version), topic):
        digest.update(part.encode())
        digest.update(b"\x00")
    digest.update(body)
    return digest.hexdigest()


def seal(body: bytes, digest: str) -> bytes:
    """The encoded state `body` (a JSON object) with the hash as its last key."""
    key = b'"' + CHAIN_KEY.encode() + b'":"' + digest.encode() + b'"}'
    if body == b"{}":
        return b"{" + key
    # One copy of a body that may hold a 1 MB message (slicing it first made two).
    return b",".join((memoryview(body)[:-1], key))


def unseal(state: bytes) -> tuple[bytes, str | None]:
    """The encoded state as it was hashed, and the hash it carries (`None`: none)."""
    if isinstance(state, str):  # a store edited by hand may hold the state as text
        state = state.encode()
    found = _SEALED.search(state)
    if found is None:
        return state, None
    return state[: found.start()] + b"}", found.group(2).decode()


class ChainingMapper(Mapper[UUID]):
    """eventsourcing's mapper, chaining each session event's hash to the previous one and
    recording the current correlation id (see the module).

    `previous(session_id, version)` reads the hash of a stored event (set by the
    application: the mapper holds no recorder); the hashes of events stored by this process
    are remembered, so a command does not read its session's last event again."""

    def __init__(
        self,
        transcoder: Transcoder,
        compressor: Compressor | None = None,
        cipher: Cipher | None = None,
    ) -> None:
        super().__init__(transcoder, compressor, cipher)
        self.previous: Callable[[UUID, int], str | None] | None = None
        self._heads: dict[UUID, tuple[int, str]] = {}
        self._lock = threading.Lock()
        self._local = threading.local()

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        if isinstance(domain_event, Snapshot):
            return super().to_stored_event(domain_event)
        topic = get_topic(type(domain_event))
        state = dict(vars(domain_event))
        originator_id = state.pop("originator_id")
        version = state.pop("originator_version")
        class_version = getattr(type(domain_event), "class_version", 1)
        if class_version > 1:
            state["class_version"] = class_version
        state.pop(CHAIN_KEY, None)
        given = _current.get()
        if given is not None:
            state.setdefault(CORRELATION_KEY, given)
        body = encode_state(self.transcoder, state)
        digest = link(self._previous(originator_id, version), originator_id, version, topic, body)
        self._pending.append((originator_id, version, digest))
        stored = seal(body, digest)
        if self.compressor:
            stored = self.compressor.compress(stored)
        if self.cipher:
            stored = self.cipher.encrypt(stored)
        return StoredEvent(
            originator_id=originator_id, originator_version=version, topic=topic, state=stored
        )

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        event = super().to_domain_event(stored_event)
        vars(event).pop(CHAIN_KEY, None)
        return event

    def plain_state(self, stored_event: StoredEvent) -> bytes:
        """A stored event's state as encoded, decrypted and decompressed."""
        state = stored_event.state
        if self.cipher:
            state = self.cipher.decrypt(state)
        if self.compressor:
            state = self.compressor.decompress(state)
        return state

    def stored_hash(self, stored_event: StoredEvent) -> str | None:
        """The hash a stored event carries, `None` for one stored before the chain."""
        return unseal(self.plain_state(stored_event))[1]

    @property
    def pending(self) -> list[tuple[UUID, int, str]]:
        """The (session, version, hash) of each event mapped since the last save ended, in
        this thread."""
        return self._pending

    @property
    def _pending(self) -> list[tuple[UUID, int, str]]:
        pending: list[tuple[UUID, int, str]] | None = getattr(self._local, "pending", None)
        if pending is None:
            pending = self._local.pending = []
        return pending

    def _previous(self, originator_id: UUID, version: int) -> str:
        if version <= 1:
            return ""
        for pending_id, pending_version, digest in reversed(self._pending):
            if pending_id == originator_id and pending_version == version - 1:
                return digest
        with self._lock:
            head = self._heads.get(originator_id)
        if head is not None and head[0] == version - 1:
            return head[1]
        found = self.previous(originator_id, version - 1) if self.previous else None
        return found or ""

    def committed(self) -> None:
        """The events mapped since the last call were stored: their hashes are the heads."""
        pending = self._pending
        with self._lock:
            for originator_id, version, digest in pending:
                self._heads[originator_id] = (version, digest)
            if len(self._heads) > 4_096:
                # Only the last few sessions' heads are worth a memory; others are re-read.
                for key in list(self._heads)[: len(self._heads) // 2]:
                    del self._heads[key]
        pending.clear()

    def discarded(self) -> None:
        """The events mapped since the last call were not stored: forget their hashes."""
        self._pending.clear()


@attrs.frozen
class ChainVerdict:
    """What checking one session's hash chain found."""

    events: int
    chained_from: int | None
    """The first version that carries a hash (`None`: none does, a store from before)."""
    broken_at: int | None = None
    """The first version whose stored form does not match the chain (`None`: intact)."""
    event: str = ""
    """The event type at `broken_at`."""
    problem: str = ""
    head: str = ""
    """The last event's hash, for a host that records it elsewhere."""

    @property
    def ok(self) -> bool:
        """Whether no stored event was found altered, missing or out of place."""
        return self.broken_at is None

    def describe(self) -> str:
        """One line for a person."""
        if not self.ok:
            return (
                f"history chain BROKEN at version {self.broken_at} ({self.event}): {self.problem}"
            )
        if self.chained_from is None:
            return f"history chain: none (all {self.events} events stored before the chain)"
        before = f"; no chain before version {self.chained_from}" if self.chained_from > 1 else ""
        return f"history chain intact ({self.events} events{before})"


def verify_chain(
    rows: Iterable[StoredEvent], plain_state: Callable[[StoredEvent], bytes]
) -> ChainVerdict:
    """Checks the stored events of one session, oldest first (`plain_state` decrypts and
    decompresses a row), and names the first that does not fit the chain."""
    previous = ""
    chained_from: int | None = None
    expected = 1
    count = 0
    for row in rows:
        count += 1
        version = row.originator_version
        problem = ""
        at = version
        body, digest = unseal(plain_state(row))
        if version > expected:
            problem, at = f"events {expected} to {version - 1} are missing (deleted)", expected
        elif version < expected:
            problem = "stored twice or out of order"
        elif digest is None and chained_from is not None:
            problem = "carries no hash, though the events before it do (removed)"
        elif digest is not None:
            chained_from = chained_from or version
            if link(previous, row.originator_id, version, row.topic, body) != digest:
                problem = (
                    "its stored content does not match its hash (this event, or the hash it "
                    "chains to, was altered)"
                )
        if problem:
            name = row.topic.rpartition(".")[2] if at == version else "missing"
            return ChainVerdict(count, chained_from, at, name, problem)
        previous = digest or ""
        expected += 1
    return ChainVerdict(count, chained_from, head=previous)
