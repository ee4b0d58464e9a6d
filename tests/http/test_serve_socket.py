"""The socket `abridged serve --workers N` shares between its workers."""

from __future__ import annotations

import asyncio
import socket

import uvicorn

from abridged.adapters.cli.serve import APP, tcp_socket


def test_connections_a_worker_accepts_send_without_waiting_for_acks() -> None:
    """Nagle's algorithm is off on each accepted connection: with it on, every response
    waited for the client's delayed acknowledgement (about 40 ms a request)."""
    listener = tcp_socket(uvicorn.Config(APP, host="127.0.0.1", port=0).bind_socket())

    async def accept_one() -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def on_connect(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            connection = writer.get_extra_info("socket")
            accepted.set_result(connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connect, sock=listener)
        async with server:
            _, client = await asyncio.open_connection(*listener.getsockname()[:2])
            try:
                return await asyncio.wait_for(accepted, 10)
            finally:
                client.close()

    assert asyncio.run(accept_one()) != 0
