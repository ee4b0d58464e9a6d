"""How domain values are stored in events and snapshots.

Transcoding names are persisted with every event: never rename one. A message is stored as
its Messages API JSON text, so tool inputs of any shape (even objects whose keys look like
the transcoder's own `_type_`/`_data_` markers) and thinking signatures come back exactly;
a large one without such keys, as that JSON itself (`encode_state`).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import OrderedDict
from typing import Any, Generic, TypeVar

import attrs
from eventsourcing.persistence import JSONTranscoder, Transcoder, Transcoding

from abridged.domain.context import Entry, SummaryChunk
from abridged.domain.ledger import LedgerEntry
from abridged.domain.messages import Message
from abridged.domain.planner import Decision
from abridged.domain.pruning import DowngradedThinking, PrunedOutput
from abridged.domain.reshowing import ReshownMessage
from abridged.domain.settings import CompactionSettings
from abridged.domain.truncation import Replacement, Truncation
from abridged.domain.usage import Usage

V = TypeVar("V")


class MessageAsJSON(Transcoding):
    type = Message
    name = "message"

    def encode(self, obj: Message) -> str:
        return message_json(obj)

    def decode(self, data: str) -> Message:
        return Message.from_wire(json.loads(data))


def message_json(message: Message) -> str:
    """The message's Messages API JSON text, as it is stored. The text of a large message is
    kept for a while by the message's identity: the proxy digests a new message from this
    text, and its event stores the same text, so 1 MB is encoded once, not twice."""
    known = _texts.get(message)
    if known is not None:
        return known
    text = json.dumps(message.to_wire(), ensure_ascii=False, separators=(",", ":"))
    if len(text) >= KEPT_TEXT_CHARS:
        _texts.put(message, text)
    return text


def encodable_json(message: Message) -> str | None:
    """`message_json(message)`, or `None` when JSON cannot carry the message (the size check
    then says why, in its own words)."""
    try:
        return message_json(message)
    except (TypeError, ValueError, RecursionError):
        return None


class ByIdentity(Generic[V]):
    """Values derived from objects, kept for the last `size` objects by their identity. Each
    object is held with its value, so that its id cannot be another object's meanwhile; safe
    to share between threads."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._kept: OrderedDict[int, tuple[object, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, obj: object) -> V | None:
        """The value kept for this very object, if any."""
        with self._lock:
            known = self._kept.get(id(obj))
        return known[1] if known is not None and known[0] is obj else None

    def put(self, obj: object, value: V) -> None:
        """Keeps `value` for `obj`, forgetting the oldest beyond `size`."""
        with self._lock:
            self._kept[id(obj)] = (obj, value)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)


KEPT_TEXTS = 16
KEPT_TEXT_CHARS = 64 * 1024
"""Texts shorter than this are encoded again when asked: it costs less than keeping them."""
_texts: ByIdentity[str] = ByIdentity(KEPT_TEXTS)


_SPLICE = f"abridged-splice-{uuid.uuid4().hex}"
"""Stands for a large message's JSON text while the rest of its event is encoded."""


class _Wire:
    """Stands for a message stored as its JSON itself (`message_wire`): never instantiated,
    so that `Message`'s own transcoding stays the one that encodes."""


class MessageAsWire(Transcoding):
    """A large message stored as its Messages API JSON itself, not as a string of it
    (`encode_state`): read back as the same message."""

    type = _Wire
    name = "message_wire"

    def encode(self, obj: object) -> object:
        raise TypeError("a message is stored as JSON itself only by encode_state")

    def decode(self, data: Any) -> Message:
        return Message.from_wire(data)


def encode_state(transcoder: Transcoder, state: dict[str, Any]) -> bytes:
    """`transcoder.encode(state)`, except that a large message (its text kept by
    `message_json`) is written as its JSON itself (transcoding `message_wire`), not escaped
    again as a string inside the event's JSON: 1 MB of tool output or code, full of quotes
    and backslashes, took 7 ms to escape and grew by a seventh. The text is the encoder's own
    output, so it is JSON as it stands. The transcoder reads every object of the event that
    has just the keys `_type_` and `_data_` as a stored value: a message whose JSON holds a
    `"_type_"` anywhere is stored as a string as before, and so is a state with no such
    message or with the stand-in found twice in what is encoded around it."""
    if (
        not isinstance(transcoder, JSONTranscoder)
        or type(transcoder).encode is not JSONTranscoder.encode
        or transcoder.encoder.ensure_ascii
        or not isinstance(transcoder.names.get(MessageAsWire.name), MessageAsWire)
    ):
        return transcoder.encode(state)
    large = [
        (key, text)
        for key, value in state.items()
        if type(value) is Message and (text := _texts.get(value)) is not None
    ]
    if len(large) != 1 or '"_type_"' in large[0][1]:
        return transcoder.encode(state)
    key, text = large[0]
    marked = {**state, key: {"_type_": MessageAsWire.name, "_data_": _SPLICE}}
    around = transcoder.encoder.encode(marked)
    stand_in = f'"{_SPLICE}"'
    if around.count(stand_in) != 1:
        return transcoder.encode(state)
    before, _, after = around.partition(stand_in)
    return b"".join((before.encode("utf8"), text.encode("utf8"), after.encode("utf8")))


class AttrsTranscoding(Transcoding):
    """A frozen attrs value stored as its fields; nested values use their own transcodings."""

    def __init__(self, cls: type[Any], name: str, *, tuples: tuple[str, ...] = ()) -> None:
        self.type = cls
        self.name = name
        self._tuples = tuples

    def encode(self, obj: Any) -> dict[str, Any]:
        return attrs.asdict(obj, recurse=False)

    def decode(self, data: dict[str, Any]) -> Any:
        for field in self._tuples:
            data[field] = tuple(data[field])
        return self.type(**data)


class SettingsTranscoding(AttrsTranscoding):
    """Compaction settings; a setting added since a session was stored takes the value that
    behaves as before (`CompactionSettings.from_stored`), not today's default."""

    def __init__(self) -> None:
        super().__init__(CompactionSettings, "compaction_settings")

    def decode(self, data: dict[str, Any]) -> Any:
        return CompactionSettings.from_stored(data)


def register_transcodings(transcoder: JSONTranscoder) -> None:
    """Registers every domain value that events and snapshots hold."""
    transcoder.register(MessageAsJSON())
    transcoder.register(MessageAsWire())
    transcoder.register(AttrsTranscoding(Usage, "usage"))
    transcoder.register(AttrsTranscoding(Truncation, "truncation"))
    transcoder.register(AttrsTranscoding(Replacement, "replacement"))
    transcoder.register(AttrsTranscoding(PrunedOutput, "pruned_output"))
    transcoder.register(AttrsTranscoding(DowngradedThinking, "downgraded_thinking"))
    transcoder.register(
        AttrsTranscoding(ReshownMessage, "reshown_message", tuples=("truncations", "block_tokens"))
    )
    transcoder.register(
        AttrsTranscoding(Entry, "entry", tuples=("block_tokens", "truncations", "replacements"))
    )
    transcoder.register(AttrsTranscoding(SummaryChunk, "summary_chunk"))
    transcoder.register(AttrsTranscoding(Decision, "decision"))
    transcoder.register(SettingsTranscoding())
    transcoder.register(AttrsTranscoding(LedgerEntry, "ledger_entry"))
