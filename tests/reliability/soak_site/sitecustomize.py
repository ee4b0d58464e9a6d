"""The soak's probes, loaded into `abridged serve`'s processes only by the soak
(`python -m tests.reliability.soak` puts this folder first on their PYTHONPATH); the product
never loads it.

With `ABRIDGED_SOAK_SITE` set, SIGUSR2 makes a process collect its garbage and hand the
memory malloc keeps free back to the system (`malloc_trim`): what its RSS is then is what
it holds. With `ABRIDGED_SOAK_TRACE=<folder>` set too (`--trace`), a process starts
`tracemalloc` and, on SIGUSR1, writes `<folder>/<pid>-<time>.txt`: the lines that hold the
most memory, the lines whose memory grew most since its first dump, and the object types
whose count grew most.
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from types import FrameType

FOLDER = os.environ.get("ABRIDGED_SOAK_TRACE")
TOP = 25

_first: list[tuple[tracemalloc.Snapshot, Counter[str]]] = []
"""The first dump's snapshot and object counts, which later dumps are compared with."""


def _types() -> Counter[str]:
    return Counter(type(o).__qualname__ for o in gc.get_objects())


def _dump(signum: int, frame: FrameType | None) -> None:
    assert FOLDER is not None
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces(
        (tracemalloc.Filter(False, tracemalloc.__file__),)
    )
    types = _types()
    lines = [f"traced {tracemalloc.get_traced_memory()[0] / 1e6:.1f} MB", "", "largest:"]
    lines += [str(stat) for stat in snapshot.statistics("lineno")[:TOP]]
    if not _first:
        _first.append((snapshot, types))
    else:
        first, first_types = _first[0]
        lines += ["", "grown since the first dump:"]
        lines += [str(stat) for stat in snapshot.compare_to(first, "lineno")[:TOP]]
        lines += ["", "object types grown since the first dump:"]
        grown = Counter({name: count - first_types[name] for name, count in types.items()})
        lines += [f"{count:+d} {name}" for name, count in grown.most_common(TOP)]
    name = f"{os.getpid()}-{time.strftime('%H%M%S')}.txt"
    (Path(FOLDER) / name).write_text("\n".join(lines) + "\n")


def _trim(signum: int, frame: FrameType | None) -> None:
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)


if os.environ.get("ABRIDGED_SOAK_SITE"):
    signal.signal(signal.SIGUSR2, _trim)
if FOLDER:
    tracemalloc.start(1)
    signal.signal(signal.SIGUSR1, _dump)
