"""A retained tail whose older messages are read from the store when first needed.

A session loaded from a snapshot knows each retained message's position and counts, but its
body is in the event that recorded it. Decoding every body costs tens of microseconds a
message: at 10,000 retained messages, half a second, on a load that may only append a
message or report a status. So the loaded tail (`entries`, and the `shown_messages` index made
of it) can be a `DeferredTail`: its length, its first and last items and appends need no
body; anything else (a slice, an iteration, a change inside it) reads every body first, all
at once, through the `TailSource` the loader installed.

A deferred tail is never half-loaded: it is either the source's items plus what was
appended since, or a plain list of them; a source that cannot read its bodies raises its own
error and leaves the tail as it was. Once read, the list replaces the deferred tail in the
session's attributes, so later reads cost what a list's cost.

The domain only holds the callable source it is given; reading the store is the
application's (`abridged.application.snapshots`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, MutableSequence
from typing import Any, Generic, Protocol, TypeVar, overload

from abridged.domain.context import Entry

T = TypeVar("T")


class TailSource(Protocol):
    """The older part of a loaded retained tail: its length, and its entries when needed.
    `entries()` reads every body (once: a source caches them); `entry(k)` reads one."""

    def __len__(self) -> int: ...

    @property
    def read(self) -> bool:
        """Whether every body has been read (`entries()` then costs nothing)."""
        ...

    def entries(self) -> list[Entry]: ...

    def entry(self, index: int) -> Entry: ...


class DeferredTail(MutableSequence[T], Generic[T]):
    """A list of `derive(entry)` for the source's entries, then the items appended since."""

    __slots__ = ("_derive", "_items", "_more", "_name", "_owner", "_source")

    def __init__(
        self,
        source: TailSource,
        derive: Callable[[Entry], T],
        owner: dict[str, Any] | None = None,
        name: str = "",
        more: Iterable[T] = (),
    ) -> None:
        self._source: TailSource | None = source
        self._derive = derive
        self._more: list[T] = list(more)
        self._items: list[T] | None = None
        self._owner = owner
        self._name = name

    @property
    def pending(self) -> tuple[TailSource, list[T]] | None:
        """The source and the items appended since, while no body has been read; else
        `None` (the tail is a list now)."""
        if self._items is not None or self._source is None:
            return None
        return self._source, self._more

    def rebound(self, owner: dict[str, Any]) -> DeferredTail[T] | list[T]:
        """The same items for a copy of the session whose attributes are `owner`: a list once
        read, else a deferred tail sharing the source (its bodies are read once for both)."""
        if self._items is not None or self._source is None:
            return list(self.loaded())
        return DeferredTail(self._source, self._derive, owner, self._name, self._more)

    def loaded(self) -> list[T]:
        """The items, every body read (at the first call)."""
        items = self._items
        if items is None:
            source = self._source
            assert source is not None
            items = [self._derive(e) for e in source.entries()]
            items.extend(self._more)
            self._items = items
            self._source = None
            self._more = []
            owner = self._owner
            if owner is not None and owner.get(self._name) is self:
                owner[self._name] = items
            self._owner = None
        return items

    # What needs no body while deferred.

    def __len__(self) -> int:
        if self._items is not None:
            return len(self._items)
        assert self._source is not None
        return len(self._source) + len(self._more)

    def append(self, value: T) -> None:
        if self._items is not None:
            self._items.append(value)
        else:
            self._more.append(value)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if self._items is None and isinstance(index, int):
            assert self._source is not None
            head = len(self._source)
            k = index + len(self) if index < 0 else index
            if head <= k < len(self):
                return self._more[k - head]
            if k in (0, head - 1) and not self._source.read:
                # The first and last of the older part are read alone (the estimate reads
                # the first message's role, an append the previous message).
                return self._derive(self._source.entry(k))
        return self.loaded()[index]

    # Everything else reads the bodies first.

    @overload
    def __setitem__(self, index: int, value: T) -> None: ...

    @overload
    def __setitem__(self, index: slice, value: Iterable[T]) -> None: ...

    def __setitem__(self, index: int | slice, value: Any) -> None:
        self.loaded()[index] = value

    def __delitem__(self, index: int | slice) -> None:
        del self.loaded()[index]

    def insert(self, index: int, value: T) -> None:
        self.loaded().insert(index, value)

    def __iter__(self) -> Iterator[T]:
        return iter(self.loaded())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DeferredTail):
            return self.loaded() == other.loaded()
        return self.loaded() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if self._items is not None:
            return f"DeferredTail({self._items!r})"
        return f"DeferredTail(<{len(self)} items, bodies not read>)"

    def __reduce__(self) -> tuple[type[list[T]], tuple[list[T]]]:
        # Pickled (or copied by `copy`) as the list it stands for.
        return list, (self.loaded(),)


def entry_itself(entry: Entry) -> Entry:
    return entry


def shown_message_of(entry: Entry) -> Any:
    return entry.shown_message
