"""How much of each request's prefix the prompt cache can reuse, over real transcripts.

Replays every transcript in ../shared/data/transcripts (or the generated demo session when
that folder is absent) at each window, and for each request after the first measures the
share of its message bytes that repeat the previous request's messages exactly (cache
markers aside). Requests that follow a prune, a reasoning downgrade or a compaction are
counted apart: those events change old messages on purpose.

Run: `make bench-prefix` (or `python -m tests.benchmarks.prefix --windows 16000,32000`).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import structlog

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.demo import demo_transcript
from abridged.adapters.token_counters import TiktokenCounter
from abridged.adapters.transcripts import Transcript, load_transcript
from abridged.domain.messages import Role
from abridged.domain.settings import settings_from

TRANSCRIPTS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "transcripts"


def strip(messages: list[dict[str, Any]]) -> list[str]:
    """Each message as canonical JSON without cache markers."""
    out = []
    for message in messages:
        content = [{k: v for k, v in b.items() if k != "cache_control"} for b in message["content"]]
        out.append(json.dumps({"role": message["role"], "content": content}, ensure_ascii=False))
    return out


def reused_bytes(previous: list[str], current: list[str]) -> int:
    total = 0
    for old, new in zip(previous, current, strict=False):
        if old != new:
            break
        total += len(new.encode())
    return total


def replay(
    transcript: Transcript, window: int, preset: str, counter: TiktokenCounter
) -> dict[str, Any]:
    app = bootstrap(counter=counter)
    reserve = min(8192, window // 4)
    session_id = app.start_session(
        model=transcript.model or "claude-sonnet-4-5",
        context_window=window,
        max_output_tokens=reserve,
        system=transcript.system,
        tools=transcript.tools,
        settings=settings_from(preset),
    )
    previous: list[str] | None = None
    previous_key: tuple[int, ...] | None = None
    steady: list[float] = []
    after_change: list[float] = []
    broken = 0
    for message in transcript.messages:
        if message.role is not Role.ASSISTANT:
            app.append_message(session_id, message)
            continue
        prepared = app.prepare_request(session_id)
        body = render_request(prepared.context, model=prepared.model, max_tokens=reserve)
        current = strip(body["messages"])
        session = app.session(session_id)
        key = (
            session.generation,
            session.prune_boundary,
            sum(len(e.replacements) for e in session.entries),
        )
        if previous is not None:
            share = reused_bytes(previous, current) / max(1, sum(len(m.encode()) for m in current))
            if key == previous_key:
                steady.append(share)
                if current[: len(previous)] != previous:
                    broken += 1
            else:
                after_change.append(share)
        previous, previous_key = current, key
        app.record_reply(session_id, message)
    return {"steady": steady, "after_change": after_change, "broken": broken}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default="16000,32000,64000")
    parser.add_argument("--preset", default="default")
    args = parser.parse_args(argv)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    windows = [int(w) for w in args.windows.split(",")]
    paths = sorted(TRANSCRIPTS.glob("*.jsonl")) if TRANSCRIPTS.is_dir() else []
    transcripts = [load_transcript(p) for p in paths] or [demo_transcript()]
    counter = TiktokenCounter()
    print(f"prefix reuse, preset {args.preset}, {len(transcripts)} transcript(s)")
    print(
        f"{'window':>8} {'requests':>9} {'steady':>7} {'reuse (steady)':>15} "
        f"{'after prune/compaction':>23} {'prefix broken':>14} {'seconds':>8}"
    )
    for window in windows:
        started = time.perf_counter()
        steady: list[float] = []
        after: list[float] = []
        broken = 0
        for transcript in transcripts:
            result = replay(transcript, window, args.preset, counter)
            steady += result["steady"]
            after += result["after_change"]
            broken += result["broken"]
        requests = len(steady) + len(after)
        print(
            f"{window:>8} {requests:>9} {len(steady) / max(1, requests):>7.1%} "
            f"{statistics.fmean(steady) if steady else 0:>15.1%} "
            f"{statistics.fmean(after) if after else 0:>23.1%} {broken:>14} "
            f"{time.perf_counter() - started:>8.1f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
