"""A real PostgreSQL server for the test run: started in a temporary folder on a free loopback
port, stopped and removed at the end.

PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user. The
server binaries come from the machine (`initdb` and `pg_ctl` on PATH or in
/usr/lib/postgresql/*/bin); `.ci/run` installs them when they are missing.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

USER = "abridged"


def server_binaries() -> tuple[str, str] | None:
    """`initdb` and `pg_ctl`, or None when PostgreSQL is not installed."""
    for folder in [None, *sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]:
        initdb = shutil.which("initdb", path=folder)
        pg_ctl = shutil.which("pg_ctl", path=folder)
        if initdb and pg_ctl:
            return initdb, pg_ctl
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def temporary_server(*settings: str) -> Iterator[str]:
    """Starts a server (with `settings` as `name=value` server settings); yields a
    `postgresql://` URL of its `postgres` database."""
    binaries = server_binaries()
    if binaries is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
    initdb, pg_ctl = binaries
    base = Path(tempfile.mkdtemp(prefix="abridged-pg-"))
    as_root = os.geteuid() == 0
    run_as = ["runuser", "-u", "postgres", "--"] if as_root else []
    if as_root:
        shutil.chown(base, "postgres")
    data, log, port = base / "data", base / "server.log", _free_port()

    def run(*command: str) -> None:
        subprocess.run([*run_as, *command], check=True, capture_output=True, timeout=120)

    try:
        run(initdb, "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync")
        options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off"
        options += "".join(f" -c {setting}" for setting in settings)
        run(pg_ctl, "-D", str(data), "-o", options, "-l", str(log), "-w", "start")
        try:
            yield f"postgresql://{USER}@127.0.0.1:{port}/postgres"
        finally:
            # Immediate: the data is thrown away, so no shutdown checkpoint is worth waiting for.
            run(pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        # A server's folder holds thousands of files (every test database is a copy of the
        # template): removed in the background, the run does not wait seconds at its end.
        subprocess.Popen(
            ["rm", "-rf", "--", str(base)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )


def fresh_database(server_url: str) -> str:
    """A new empty database on the server; returns its URL."""
    import psycopg

    name = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """One PostgreSQL server per test worker, for the whole run."""
    if server_binaries() is None:
        reason = "PostgreSQL server binaries are not installed (apt-get install postgresql)"
        if os.environ.get("CI"):
            pytest.fail(reason)  # CI installs them: a missing server there is a broken set-up
        pytest.skip(reason)
    with temporary_server() as url:
        yield url
