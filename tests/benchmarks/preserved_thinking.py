"""What append-only requests cost on a model that binds thinking to its prefix.

Every shared transcript is replayed with a signed thinking block leading each reply
(`tests.support.bound_replay`), twice per window: as abridged runs on such a model (prunes,
downgrades and the ledger change earlier content only at a compaction; an open thinking loop
waits), and as it ran before (the same settings, the model taken as not binding thinking).
Each request is billed by the prompt-cache model of `abridged simulate`
(`adapters/simulation/cache.py`: cache writes at 1.25x, reads at 0.1x). The second run's
requests that send a thinking block under a changed prefix are the ones the API refuses;
they are counted, and billed as if they had gone through.

Run: `.venv/bin/python -m tests.benchmarks.preserved_thinking [WINDOW ...]` (default 32000).
"""

from __future__ import annotations

import sys

from abridged.adapters.simulation.cache import CacheRates, PromptCache, request_blocks
from abridged.adapters.token_counters import TiktokenCounter
from abridged.adapters.transcripts import load_transcript
from tests.conftest import TRANSCRIPTS
from tests.support.bound_replay import BOUND_MODEL, BoundReplay, replay_bound
from tests.support.counting import MemoCounter

COUNTER = MemoCounter(TiktokenCounter())
RATES = CacheRates()


def billed(replay: BoundReplay) -> float:
    cache = PromptCache(RATES)
    return sum(
        cache.bill(request_blocks(body, COUNTER.count)).billed(RATES) for body in replay.bodies
    )


def main(windows: list[int]) -> None:
    paths = sorted(TRANSCRIPTS.glob("*.jsonl"))
    print(
        f"{'window':>6} {'session':<46} {'bound M':>8} {'before M':>8} {'ratio':>6} "
        f"{'refused before':>14} {'thinking off':>12}"
    )
    for window in windows:
        totals = [0.0, 0.0]
        refused_total = paused_total = requests_total = 0
        for path in paths:
            transcript = load_transcript(path)
            runs = [
                replay_bound(
                    COUNTER,
                    transcript.messages,
                    system=transcript.system,
                    tools=transcript.tools,
                    window=window,
                    keep_bodies=True,
                    capabilities=capabilities,
                )
                for capabilities in (None, {BOUND_MODEL: {"prefix_bound_thinking": False}})
            ]
            bound, before = (billed(run) for run in runs)
            refused = sum(1 for b in runs[1].bodies if _refused(b))
            totals[0] += bound
            totals[1] += before
            refused_total += refused
            paused_total += runs[0].thinking_paused
            requests_total += runs[0].requests
            print(
                f"{window:>6} {path.stem[:46]:<46} {bound / 1e6:>8.3f} {before / 1e6:>8.3f} "
                f"{bound / before:>6.3f} {refused:>14} {runs[0].thinking_paused:>12}"
            )
        print(
            f"{window:>6} {'all ' + str(len(paths)) + ' sessions':<46} {totals[0] / 1e6:>8.3f} "
            f"{totals[1] / 1e6:>8.3f} {totals[0] / totals[1]:>6.3f} "
            f"{refused_total:>9} of {requests_total:<4} {paused_total:>8}"
        )


def _refused(body: dict[str, object]) -> bool:
    from tests.support.thinking_binding import binding_failures

    return bool(binding_failures(body))


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [32_000])
