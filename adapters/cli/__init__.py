"""The `abridged` command line: replay recorded transcripts, run the demo, audit a session.

One module per group of commands; each registers itself on the `main` group.
"""

from __future__ import annotations

from abridged.adapters.cli import (
    audit,
    history,
    read_model,
    replay,
    report,
    serve,
    sessions,
    show,
    simulate,
)
from abridged.adapters.cli.common import main

__all__ = [
    "audit",
    "history",
    "main",
    "read_model",
    "replay",
    "report",
    "serve",
    "sessions",
    "show",
    "simulate",
]
