"""Topics of stored events written before the code moved under the `abridged` package.

eventsourcing stores each event with its class's topic (`module:qualname`). Sessions stored
by earlier versions name `domain.session:Session...`; registering those topics makes them
resolve to today's classes, so old stores load and continue unchanged.
"""

from __future__ import annotations

from eventsourcing.domain import Aggregate
from eventsourcing.utils import register_topic

from abridged.domain.session import Session

LEGACY_MODULES = ("domain.session",)


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
