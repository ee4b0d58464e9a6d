"""Benchmark: compaction off the user's turn, with a slow summarizer.

A 200-turn coding-agent session runs through the real service on a SQLite file, with a
summarizer that takes 2 s per summary and a model that takes `--model-seconds` per reply.
Each turn is a prompt, a tool call and its output, and an answer; each model call is
`prepare_request` (timed), then the model's latency, then `record_reply`.

It runs the session twice: with `background_threshold_ratio` set (the compaction starts
after the reply that crosses the mark, on a worker thread) and without it (the compaction
runs inside `prepare_request`, on the user's turn). For each it reports the compactions, how
many `prepare_request` calls ran the summarizer (on the caller's thread) or waited longer
than `--wait-seconds` (for a running compaction), and the slowest prepare.

Run with `python -m tests.benchmarks.background` (`--help` for the knobs). It always exits 0:
it reports whether the target holds (5 or more compactions, and no prepare that waits for a
summarizer), it does not enforce it.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
import structlog

from abridged.adapters.bootstrap import bootstrap
from abridged.application.ports import Summary
from abridged.domain.messages import Message
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, exchange, words
from tests.support.fakes import FakeSummarizer, FakeTokenCounter


class TimedSummarizer(FakeSummarizer):
    """The fake summary, after `delay` seconds; records the thread of each call."""

    def __init__(self, delay: float) -> None:
        super().__init__(words(60, "fact"))
        self.delay = delay
        self.threads: list[str] = []

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
    ) -> Summary:
        self.threads.append(threading.current_thread().name)
        time.sleep(self.delay)
        return super().summarize(messages, max_tokens=max_tokens, instructions=instructions)


@attrs.frozen
class Run:
    label: str
    seconds: float
    compactions: int
    background_compactions: int
    discarded: int
    summaries_on_caller: int
    prepares: int
    prepares_waiting: int
    prepare_max: float
    prepare_median: float
    prepare_p99: float


def run(args: argparse.Namespace, background: bool, folder: Path) -> Run:
    summarizer = TimedSummarizer(args.summary_seconds)
    app = bootstrap(
        folder / f"{'bg' if background else 'fg'}.sqlite3",
        counter=FakeTokenCounter(),
        summarizer=summarizer,
    )
    settings = CompactionSettings(
        threshold_ratio=args.threshold,
        background_threshold_ratio=args.mark if background else None,
        keep_recent_turns=3,
        tool_output_mode="keep_all",
    )
    session_id = app.start_session(
        model="claude-bench",
        context_window=args.window,
        max_output_tokens=1_000,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=settings,
    )
    caller = threading.current_thread().name
    timings: list[float] = []
    began = time.perf_counter()
    for turn in range(args.turns):
        call, output = exchange([words(args.output_words, f"line{turn}")])
        steps = [(Message.user(f"Request {turn}: " + words(20)), call)]
        steps.append((output, Message.assistant(f"Done with request {turn}. " + words(20))))
        for user, reply in steps:
            app.append_message(session_id, user)
            start = time.perf_counter()
            app.prepare_request(session_id)
            timings.append(time.perf_counter() - start)
            time.sleep(args.model_seconds)
            app.record_reply(session_id, reply)
        print(
            f"\r{'background' if background else 'foreground'} turn {turn + 1}",
            end="",
            file=sys.stderr,
        )
    app.background.wait()
    seconds = time.perf_counter() - began
    print(file=sys.stderr)
    history = app.history(session_id)
    hits = [e for e in history if isinstance(e, Session.CompactionThresholdHit)]
    completed = sum(isinstance(e, Session.CompactionCompleted) for e in history)
    discarded = sum(isinstance(e, Session.CompactionDiscarded) for e in history)
    ordered = sorted(timings)
    app.close()
    return Run(
        label="background" if background else "on the user's turn",
        seconds=seconds,
        compactions=completed,
        background_compactions=sum(h.decision.trigger == "background" for h in hits),
        discarded=discarded,
        summaries_on_caller=sum(t == caller for t in summarizer.threads),
        prepares=len(timings),
        prepares_waiting=sum(t > args.wait_seconds for t in timings),
        prepare_max=ordered[-1],
        prepare_median=statistics.median(ordered),
        prepare_p99=ordered[int(0.99 * (len(ordered) - 1))],
    )


def report(args: argparse.Namespace, runs: list[Run]) -> None:
    print(
        f"session: {args.turns} turns ({args.turns * 4} messages), window {args.window:,}, "
        f"threshold {args.threshold}, background mark {args.mark}; summarizer "
        f"{args.summary_seconds} s, model {args.model_seconds} s per reply\n"
    )
    print("| | background | on the user's turn |")
    print("|---|---|---|")
    rows: list[tuple[str, Callable[[Run], str]]] = [
        ("compactions", lambda r: f"{r.compactions}"),
        ("of them started in the background", lambda r: f"{r.background_compactions}"),
        ("background summaries discarded", lambda r: f"{r.discarded}"),
        ("prepares", lambda r: f"{r.prepares}"),
        ("prepares that ran the summarizer", lambda r: f"{r.summaries_on_caller}"),
        (f"prepares over {args.wait_seconds} s", lambda r: f"{r.prepares_waiting}"),
        ("prepare, median", lambda r: f"{r.prepare_median * 1000:.1f} ms"),
        ("prepare, p99", lambda r: f"{r.prepare_p99 * 1000:.1f} ms"),
        ("prepare, slowest", lambda r: f"{r.prepare_max * 1000:.1f} ms"),
        ("whole run", lambda r: f"{r.seconds:.1f} s"),
    ]
    by_label = {r.label: r for r in runs}
    for name, cell in rows:
        cells = [
            cell(by_label[label]) if label in by_label else "-"
            for label in ("background", "on the user's turn")
        ]
        print(f"| {name} | {' | '.join(cells)} |")
    background = by_label["background"]
    holds = (
        background.compactions >= 5
        and background.summaries_on_caller == 0
        and background.prepares_waiting == 0
    )
    verdict = "yes" if holds else "no"
    print(f"\ntarget (>= 5 compactions, no prepare waits for a summarizer): {verdict}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--window", type=int, default=12_000)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--mark", type=float, default=0.45)
    parser.add_argument("--output-words", type=int, default=150)
    parser.add_argument("--summary-seconds", type=float, default=2.0)
    parser.add_argument("--model-seconds", type=float, default=0.15)
    parser.add_argument("--wait-seconds", type=float, default=0.5)
    parser.add_argument("--skip-foreground", action="store_true")
    args = parser.parse_args(argv)
    logging.disable(logging.INFO)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with tempfile.TemporaryDirectory() as folder:
        runs = [run(args, True, Path(folder))]
        if not args.skip_foreground:
            runs.append(run(args, False, Path(folder)))
    report(args, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
