"""What-if evaluation of compaction strategies over recorded transcripts (`abridged simulate`).

`strategies` holds abridged (through the `Sessions` service on an in-memory store) and the
reference strategies it is compared with; `cache` a prompt-cache cost model; `facts` the
facts a request should still carry; `run` replays and measures.
"""

from __future__ import annotations

from abridged.adapters.simulation.cache import CacheRates, PromptCache
from abridged.adapters.simulation.facts import Fact, extract_facts
from abridged.adapters.simulation.outcomes import Outcome, Total, totals
from abridged.adapters.simulation.run import simulate
from abridged.adapters.simulation.strategies import REFERENCES, AbridgedStrategy, Setup

__all__ = [
    "REFERENCES",
    "AbridgedStrategy",
    "CacheRates",
    "Fact",
    "Outcome",
    "PromptCache",
    "Setup",
    "Total",
    "extract_facts",
    "simulate",
    "totals",
]
