"""The whole demo session: which requests, in what order, and the transcript they make."""

from __future__ import annotations

import random
from collections.abc import Callable

from abridged.adapters.demo.agent import Agent
from abridged.adapters.demo.anchor_scenarios import japanese_docs, unicode_headings
from abridged.adapters.demo.feature_scenarios import table_alignment, watch_option
from abridged.adapters.demo.maintenance_scenarios import release, slow_render, windows_paths
from abridged.adapters.demo.repository import Repo
from abridged.adapters.demo.tools import DEMO_MODEL, SYSTEM_PROMPT, demo_tools
from abridged.adapters.transcripts import Transcript


def demo_transcript(*, seed: int = 7, turns: int = 6) -> Transcript:
    """A realistic coding-agent session of `turns` requests; the same seed gives the same one.

    At the defaults it has about 300-500 messages and 150k-400k tokens, so replaying it at a
    32k-token window compacts many times.
    """
    if turns < 1:
        raise ValueError(f"turns must be at least 1, got {turns}")
    rng = random.Random(seed)
    repo = Repo(random.Random(f"quillmark-repo:{seed}"))
    agent = Agent(rng, repo)
    done: set[_Scenario] = set()
    for scenario in _plan(rng, turns):
        if scenario in done:
            # Past six requests they repeat, as backports to a fresh maintenance branch, so
            # every edit still applies to the code it was written for.
            repo.files = dict(repo.original)
            done.clear()
            agent.preamble = (
                f"Now the same on the maintenance-2.{rng.randint(0, 2)} branch (checked out). "
            )
        done.add(scenario)
        scenario(agent)
    return Transcript(
        messages=tuple(agent.messages),
        system=SYSTEM_PROMPT,
        tools=demo_tools(),
        model=DEMO_MODEL,
        source=f"<demo seed={seed} turns={turns}>",
    )


_Scenario = Callable[[Agent], None]
_REQUESTS: tuple[_Scenario, ...] = (
    unicode_headings,
    table_alignment,
    watch_option,
    japanese_docs,
    slow_render,
    windows_paths,
)


def _plan(rng: random.Random, turns: int) -> list[_Scenario]:
    """`turns` requests: a shuffled selection, repeated when more are asked, release last."""
    order: list[_Scenario] = []
    while len(order) < turns - 1:
        batch = list(_REQUESTS)
        rng.shuffle(batch)
        order += batch
    return [*order[: turns - 1], release]
