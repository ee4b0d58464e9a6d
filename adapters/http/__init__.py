"""`abridged serve`: a Messages-compatible proxy and a sessions API over HTTP.

`create_app(ServeConfig(...))` is the ASGI application; `abridged serve` runs it on uvicorn.
See docs/serving.md.
"""

from __future__ import annotations

from abridged.adapters.http.app import create_app
from abridged.adapters.http.config import ServeConfig

__all__ = ["ServeConfig", "create_app"]
