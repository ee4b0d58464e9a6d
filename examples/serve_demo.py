"""`make serve-demo`: `abridged serve` in front of a local fake Messages API, on SQLite, with
a generated coding-agent session replayed through it by the anthropic SDK.

The client behaves as an agent harness does: it sends its whole history with every
request, as if it spoke to the API directly. The proxy appends what is new, compacts, sends
the compacted request upstream and records the reply. The fake API answers each request
with the session's next assistant message, so the client's history is the generated one.

    .venv/bin/python -m examples.serve_demo [--turns 6] [--window 32000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx2

from abridged import bootstrap
from abridged.adapters.demo import demo_transcript
from abridged.application.auditing import audit_session
from tests.support.fake_anthropic import FakeAnthropic, estimate_tokens, message
from tests.support.serve import free_port

SESSION = "serve-demo"
MODEL = "claude-sonnet-4-6"


def start_serve(db: str, upstream: str, window: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "abridged"),
        "serve",
        f"--db={db}",
        f"--upstream={upstream}",
        f"--port={port}",
        f"--context-window={window}",
    ]
    print("$", " ".join(command[1:]), flush=True)
    server = subprocess.Popen(command, env={**os.environ})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if httpx2.get(f"{url}/healthz", timeout=1).status_code == 200:
                return server, url
        except httpx2.HTTPError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("abridged serve did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--window", type=int, default=32_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    transcript = demo_transcript(seed=args.seed, turns=args.turns)
    wire = [m.to_wire() for m in transcript.messages]
    db = str(Path(tempfile.mkdtemp(prefix="abridged-serve-demo-")) / "sessions.sqlite3")
    with FakeAnthropic() as upstream:
        for reply in (m for m in wire if m["role"] == "assistant"):
            calls = any(block["type"] == "tool_use" for block in reply["content"])
            upstream.enqueue(
                message(reply["content"], stop_reason="tool_use" if calls else "end_turn")
            )
        server, url = start_serve(db, upstream.base_url, args.window)
        try:
            replay(url, MODEL, transcript.system, wire, transcript.tools, upstream)
        finally:
            server.terminate()
            server.wait(timeout=30)
    report(db)


def replay(
    url: str,
    model: str,
    system: str,
    wire: list[dict[str, Any]],
    tools: Any,
    upstream: FakeAnthropic,
) -> None:
    history: list[Any] = []
    requests = 0
    client_tokens = sent_tokens = 0
    with anthropic.Anthropic(
        api_key="sk-ant-demo-key",  # passed upstream as it is; never stored
        base_url=url,
        max_retries=0,
        default_headers={"x-abridged-session": SESSION},
    ) as client:
        for expected in wire:
            if expected["role"] == "user":
                history.append(expected)
                continue
            body: dict[str, Any] = {
                "model": model,
                "max_tokens": 4_096,
                "system": system,
                "tools": list(tools),
                "messages": history,
            }
            if requests % 3 == 2:
                with client.messages.stream(**body) as stream:
                    reply = stream.get_final_message()
            else:
                reply = client.messages.create(**body)
            requests += 1
            content = [block.model_dump(exclude_none=True) for block in reply.content]
            history.append({"role": "assistant", "content": content})
            mine, theirs = estimate_tokens(body), estimate_tokens(upstream.requests[-1].body)
            client_tokens += mine
            sent_tokens += theirs
            if requests % 20 == 0 or requests == 1:
                print(
                    f"request {requests:>4}: the client sent {mine:>8,} tokens, "
                    f"upstream got {theirs:>7,}",
                    flush=True,
                )
    print(
        f"\n{requests} requests through the proxy: the client sent {client_tokens:,} tokens "
        f"in all, the upstream received {sent_tokens:,} ({sent_tokens / client_tokens:.0%}; "
        "the fake API's count, 4 characters a token)."
    )
    if upstream.violations:
        raise SystemExit(f"invalid requests reached the upstream: {upstream.violations[:3]}")


def report(db: str) -> None:
    sessions = bootstrap(db)
    try:
        page = sessions.list_sessions()
        print(f"Sessions recorded: {len(page.sessions)} (store: {db})")
        for info in page.sessions:
            stats = sessions.stats(info.id)
            audit = audit_session(sessions, info.id)
            print(
                f"  {info.id} {info.metadata.get('abridged:name')}: {stats.messages} messages, "
                f"{stats.requests} replies recorded, {stats.compactions} compactions, "
                f"audit {'ok' if audit.ok else 'MISMATCH'}"
            )
            for compaction in sessions.compactions(info.id):
                print(
                    f"    compaction {compaction.generation} ({compaction.trigger}): "
                    f"{compaction.tokens_before:,} -> {compaction.tokens_after:,} tokens"
                )
        print(f"\nInspect it: abridged show {page.sessions[0].id} --db {db}")
    finally:
        sessions.close()


if __name__ == "__main__":
    main()
