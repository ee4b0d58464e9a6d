"""The worker's counters, read at `GET /metrics` in the Prometheus text format.

It is the service's `Metrics` port (compactions, overflows, ...) plus the proxy's own
counters; each worker process counts its own requests."""

from __future__ import annotations

import threading
from collections.abc import Mapping


class ServeMetrics:
    """Counters and sums by name and attributes (a histogram is kept as its count and sum)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}

    def add(self, name: str, value: int = 1, attributes: Mapping[str, str] | None = None) -> None:
        key = (name, tuple(sorted((attributes or {}).items())))
        with self._lock:
            self._values[key] = self._values.get(key, 0) + value

    def record(self, name: str, value: float, attributes: Mapping[str, str] | None = None) -> None:
        self.add(f"{name}.count", 1, attributes)
        labels = tuple(sorted((attributes or {}).items()))
        with self._lock:
            key = (f"{name}.sum", labels)
            self._values[key] = self._values.get(key, 0) + value

    def text(self) -> str:
        """Every value, one line each: `name{label="value"} number`."""
        with self._lock:
            items = sorted(self._values.items())
        lines = []
        for (name, labels), value in items:
            metric = name.replace(".", "_")
            rendered = ",".join(f'{k}="{v}"' for k, v in labels)
            lines.append(f"{metric}{{{rendered}}} {value:g}" if rendered else f"{metric} {value:g}")
        return "\n".join(lines) + "\n"
