"""Set-up made once per test run and shared by every xdist worker: a worker that needs it
first makes it under a lock in the run's common temporary folder; the others wait for it and
reuse it. For set-up that is slow to make and only read afterwards (a built wheel and the
virtual environment it is installed in)."""

from __future__ import annotations

import fcntl
from collections.abc import Callable
from pathlib import Path

import pytest

DONE = ".made"


def made_once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder `name`, filled by `make(folder)` by the first worker to ask for it."""
    base = factory.getbasetemp()
    # Under xdist each worker's base is a folder of the run's own (popen-gw0, …).
    shared = base.parent if base.name.startswith("popen-gw") else base
    folder = shared / name
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (folder / DONE).exists():
                folder.mkdir(exist_ok=True)
                make(folder)
                (folder / DONE).touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return folder
