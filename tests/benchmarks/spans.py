"""What the span-by-span benchmarks share (`new_message`, `huge_compaction`): timed spans,
their medians, and the command line `[--real] [N]`."""

from __future__ import annotations

import functools
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from tests.benchmarks.serve import use_real_text

spans: dict[str, float] = defaultdict(float)
"""Seconds spent in each span since it was last cleared."""


def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, adding the time each call takes to the span `name`."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spans[name] += time.perf_counter() - started

    return wrapper


def print_medians(results: list[dict[str, float]]) -> None:
    """Prints each span's median over `results`, in milliseconds."""
    for key in results[0]:
        values = [1000 * result.get(key, 0.0) for result in results]
        print(f"{key:<56} median {statistics.median(values):7.1f} ms")


def runs_from_argv(default: int = 5) -> int:
    """N from `[--real] [N]`; `--real` makes the serve benchmark's text real."""
    if "--real" in sys.argv:
        use_real_text()
    counts = [int(a) for a in sys.argv[1:] if a != "--real"]
    return counts[0] if counts else default
