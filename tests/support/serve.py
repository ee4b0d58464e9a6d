"""`abridged serve`'s application on a real uvicorn server in a thread, for tests through
the real SDK and an HTTP client."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from abridged.adapters.http import ServeConfig, create_app
from abridged.application.service import Sessions


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def served(config: ServeConfig, sessions: Sessions | None = None) -> Iterator[str]:
    """Serves `create_app(config, sessions)` on loopback; yields its base URL."""
    with serving(config, sessions) as (url, _):
        yield url


@contextmanager
def serving(
    config: ServeConfig, sessions: Sessions | None = None
) -> Iterator[tuple[str, uvicorn.Server]]:
    """`served`, with the server (whose open connections show when it saw a client leave).
    The listening socket is bound here and handed to uvicorn: a port picked free and bound
    later could be taken meanwhile (by any process's outgoing connection), and the server
    would not start."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    port: int = listener.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(config, sessions),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="on",
        )
    )
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [listener]}, name="abridged-serve", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 10
    try:
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()
