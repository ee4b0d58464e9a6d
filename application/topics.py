"""Topics of stored events written before the code moved under the `abridged` package.

eventsourcing stores each event with its class's topic (`module:qualname`). Sessions stored
by earlier versions name `domain.session:Session...`; registering those topics makes them
resolve to today's classes, so old stores load and continue unchanged.
"""

from __future__ import annotations

from typing import Any

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import Mapper, StoredEvent
from eventsourcing.utils import get_topic, register_topic

from abridged.domain.errors import StoreError
from abridged.domain.session import Session

LEGACY_MODULES = ("domain.session",)


def topics_of(cls: type) -> list[str]:
    """Every topic a stored event of class `cls` may carry: today's and the earlier ones (to
    select its notifications by topic in any store)."""
    return [get_topic(cls), *(f"{module}:{cls.__qualname__}" for module in LEGACY_MODULES)]


def register_legacy_topics() -> None:
    """Makes every earlier topic of the session and its events resolve (idempotent)."""
    classes: list[type] = [Session]
    classes += [
        value
        for value in vars(Session).values()
        if isinstance(value, type)
        and issubclass(value, Aggregate.Event)
        and value.__qualname__.startswith("Session.")
    ]
    for module in LEGACY_MODULES:
        for cls in classes:
            register_topic(f"{module}:{cls.__qualname__}", cls)


PACKAGE = "abridged"
LIBRARY_TOPICS = frozenset({"eventsourcing.domain:Snapshot"})
"""eventsourcing's own snapshot class, which stores made before abridged's snapshots hold."""


def trusted_topic(topic: str) -> bool:
    """Whether a stored event's topic names one of abridged's own classes (or an earlier name
    of one): the only topics a store is allowed to make this process resolve."""
    module = topic.partition(":")[0]
    return (
        topic in LIBRARY_TOPICS
        or module == PACKAGE
        or module.startswith(PACKAGE + ".")
        or module in LEGACY_MODULES
    )


class TrustedTopicsMapper(Mapper[Any]):
    """eventsourcing's mapper, resolving only `trusted_topic`s: resolving a topic imports the
    module it names, so a store from elsewhere (a copied file, a shared database) could
    otherwise make the process import, and run, any installed module."""

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        if not trusted_topic(stored_event.topic):
            raise StoreError(
                f"the store holds an event of type {stored_event.topic!r:.120}, which is not "
                "abridged's; it was not loaded (is this store written by another application?)"
            )
        return super().to_domain_event(stored_event)
