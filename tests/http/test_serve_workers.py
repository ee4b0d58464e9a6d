"""`abridged serve --workers 2` over one PostgreSQL: concurrent conversations and a hot
session sent the same request at once from several clients lose and duplicate nothing, and
compact once per state."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.domain.events import CompactionCompleted, MessageAppended
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.postgres import fresh_database
from tests.support.serve import free_port

MODEL = "claude-sonnet-4-6"
TURNS = 5


@pytest.fixture
def workers(
    postgres_server: str, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> Iterator[tuple[str, str]]:
    """Two uvicorn worker processes of `abridged serve` on a fresh database: (url, db)."""
    db = fresh_database(postgres_server)
    bootstrap(db).close()  # the tables exist before two workers race to create them
    log = tmp_path / "serve.log"
    for _ in range(3):
        # The port is picked free, then bound by the server: an outgoing connection of any
        # process may take it in between, and the server then exits at once. Another pick.
        port = free_port()
        command = [
            str(Path(sys.executable).parent / "abridged"), "serve", "--db", db,
            "--upstream", fake_anthropic.base_url, "--port", str(port), "--workers", "2",
            "--context-window", "4000",
        ]  # fmt: skip
        with log.open("w") as stderr:  # the server's own copy stays open
            server = subprocess.Popen(command, stderr=stderr, env={**os.environ})
        url = f"http://127.0.0.1:{port}"
        if _started(server, url, log):
            break
    else:
        raise RuntimeError(f"serve did not start: {log.read_text()}")
    try:
        yield url, db
    finally:
        server.terminate()
        server.wait(timeout=30)


def _started(server: subprocess.Popen[bytes], url: str, log: Path) -> bool:
    """Whether `server` answers its health check; False when it could not bind its port."""
    # Each worker imports the application first: on a machine busy with other jobs, that
    # alone can take most of a minute.
    deadline = time.monotonic() + 180
    while True:
        try:
            if httpx2.get(f"{url}/healthz", timeout=1).status_code == 200:
                return True
        except httpx2.HTTPError:
            pass
        if server.poll() is not None and "address already in use" in log.read_text().lower():
            return False
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            raise RuntimeError(f"serve did not start: {log.read_text()}")
        time.sleep(0.1)


def send(url: str, name: str, history: list[Any]) -> dict[str, Any]:
    answer = httpx2.post(
        f"{url}/v1/messages",
        json={"model": MODEL, "max_tokens": 60, "messages": history},
        headers={"x-api-key": TEST_API_KEY, "x-abridged-session": name},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def conversation(url: str, name: str, copies: int = 1) -> list[Any]:
    """TURNS turns; each request sent `copies` times at once (clients retrying)."""
    history: list[Any] = []
    with ThreadPoolExecutor(copies) as pool:
        for turn in range(TURNS):
            history.append({"role": "user", "content": f"{name} step {turn}: " + "log " * 600})
            replies = list(pool.map(lambda _: send(url, name, list(history)), range(copies)))
            history.append({"role": "assistant", "content": replies[0]["content"]})
    return history


def test_workers_on_one_postgres_lose_and_duplicate_nothing(
    workers: tuple[str, str], fake_anthropic: FakeAnthropic
) -> None:
    url, db = workers
    names = [f"conversation-{n}" for n in range(6)]
    with ThreadPoolExecutor(7) as pool:
        hot = pool.submit(conversation, url, "hot", 4)
        histories = dict(zip(names, pool.map(lambda n: conversation(url, n), names), strict=True))
    histories["hot"] = hot.result()

    store = bootstrap(db)
    try:
        listed = {
            info.metadata["abridged:name"]: info.id for info in store.list_sessions().sessions
        }
        assert set(listed) == set(histories)  # one session each: no branch, no stray session
        for name, history in histories.items():
            events = store.history(listed[name])
            stored = [e.message.to_wire() for e in events if isinstance(e, MessageAppended)]
            # Every message once, in order: the client's history and the last reply.
            assert [m["role"] for m in stored] == ["user", "assistant"] * TURNS, name
            texts = [m["content"][0]["text"] for m in stored[::2]]
            assert texts == [m["content"] for m in history[::2]], name
            generations = [e.generation for e in events if isinstance(e, CompactionCompleted)]
            assert generations, name  # the small window made each compact
            assert generations == sorted(set(generations)), name  # one compaction per state
    finally:
        store.close()
    assert fake_anthropic.violations == []
