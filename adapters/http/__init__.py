"""`abridged serve`: a Messages-compatible proxy and a sessions API over HTTP.

`create_app(ServeConfig(...))` is the ASGI application; `abridged serve` runs it on uvicorn.
See docs/serving.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from abridged.adapters.http.config import ServeConfig

if TYPE_CHECKING:
    from abridged.adapters.http.app import create_app

__all__ = ["ServeConfig", "create_app"]


def __getattr__(name: str) -> Any:
    # The application (FastAPI and the service) is imported when it is asked for: the CLI
    # reads only the configuration, and each worker process imports the CLI again on start.
    if name == "create_app":
        from abridged.adapters.http.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
