"""Benchmark: the first compaction of a session holding a 1 MB message, span by span.

A session (in memory, tiktoken counter, extractive summaries) starts with the serve
benchmark's 1 MB first message, is answered, gets a short second message and is compacted
(`compact`): the compaction the serve benchmark's continuing requests meet when their second
turn makes it due. Times with `perf_counter`: redacting the messages the ledger reads (the
whole 1 MB message among them), the ledger's extraction, writing the summary, and the whole
compaction. Prints the medians of N sessions (5 by default) after one
warm-up.

Run with `python -m tests.benchmarks.huge_compaction [--real] [N]` (`--real`: stretches of
the shared transcripts instead of the repeated log line).
"""

from __future__ import annotations

import time

from abridged.adapters.bootstrap import bootstrap
from abridged.application import ledgering, summaries
from abridged.domain import ledger
from tests.benchmarks.serve import MAX_TOKENS, MODEL, text
from tests.benchmarks.spans import print_medians, runs_from_argv, spans, timed


def main(runs: int) -> None:
    ledgering.redact_each = timed("redacting what the ledger reads", ledgering.redact_each)  # type: ignore[attr-defined]
    ledger.extract = timed("the ledger's extraction", ledger.extract)
    writer = summaries.SummaryWriter
    writer.write = timed("writing the summary", writer.write)  # type: ignore[method-assign]
    sessions = bootstrap(":memory:")
    results: list[dict[str, float]] = []
    for run in range(runs + 1):
        name = f"huge-{run}"
        session_id = sessions.start_session(
            model=MODEL,
            max_output_tokens=MAX_TOKENS,
            messages=[{"role": "user", "content": text(1_000_000, f"{name} turn 0")}],
        )
        first = sessions.prepare_request(session_id)
        usage = {"input_tokens": first.context.estimate, "output_tokens": 5}
        sessions.record_reply(session_id, {"role": "assistant", "content": "Noted."}, usage)
        sessions.append_message(session_id, {"role": "user", "content": text(2_000, name)})
        spans.clear()
        started = time.perf_counter()
        sessions.compact(session_id)
        spans["the compaction, whole"] = time.perf_counter() - started
        if run:  # the first warms the tokenizer
            results.append(dict(spans))
    sessions.close()
    print_medians(results)


if __name__ == "__main__":
    main(runs_from_argv())
