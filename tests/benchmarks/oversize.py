"""Benchmark: messages far larger than the window, appended and sent.

Appends a user message of about 200,000 tokens and a reply whose tool call input holds
about 60,000 tokens to a 16,000-token session (in memory, tiktoken counter), and times the
append (counting and planning what requests show), the next `prepare_request` and the
reply's recording. Prints the medians of `--repeat` runs. Always exits 0.

Run with `python -m tests.benchmarks.oversize`.
"""

from __future__ import annotations

import argparse
import statistics
import time

from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.service import Sessions
from abridged.domain.messages import Message, ToolResultBlock, ToolUseBlock

TOOLS = [{"name": "write_file", "input_schema": {"type": "object"}}]


def source_lines(tokens: int, seed: int) -> str:
    return "\n".join(
        f"def handler_{seed}_{i}(request): return respond({i} * value_{i % 97})"
        for i in range(tokens // 14)
    )


def run(counter: TiktokenCounter, seed: int) -> tuple[float, float, float]:
    app = Sessions(
        counter=counter,
        summarizer=ExtractiveSummarizer(counter),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model="claude-test", context_window=16_000, max_output_tokens=4_000, tools=TOOLS
    )
    prompt = Message.user(source_lines(200_000, seed))
    reply = Message.assistant(
        ToolUseBlock(
            "toolu_1", "write_file", {"path": "a.py", "content": source_lines(60_000, seed)}
        )
    )
    start = time.perf_counter()
    app.append_message(session_id, prompt)
    appended = time.perf_counter()
    app.prepare_request(session_id)
    prepared = time.perf_counter()
    app.record_reply(session_id, reply)
    recorded = time.perf_counter()
    app.append_message(session_id, Message.user(ToolResultBlock("toolu_1", "written")))
    app.prepare_request(session_id)
    return (appended - start, prepared - appended, recorded - prepared)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.oversize")
    parser.add_argument("--repeat", type=int, default=5, help="runs (default: 5)")
    args = parser.parse_args()
    counter = TiktokenCounter()
    counter.count("warm the tokenizer up")
    runs = [run(counter, seed) for seed in range(args.repeat)]
    names = ("append 200k-token user message", "prepare_request", "record 60k-token tool input")
    for index, name in enumerate(names):
        median = statistics.median(r[index] for r in runs) * 1000
        print(f"{name:32} median {median:8.1f} ms over {len(runs)} runs")


if __name__ == "__main__":
    main()
