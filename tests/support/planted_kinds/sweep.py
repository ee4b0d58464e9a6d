"""A sweep: every turn the agent's reply states ONE fact of a kind (rotating), then the session
goes on, so the facts' turns (`msg`) show how far back the final request still holds each kind.
Two kinds the ledger was built for (a backticked name, an email) are the controls."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from tests.support.planted_kinds.accounts import FIRST, LAST
from tests.support.planted_kinds.session import PlantedSession

# (kind, the fact for turn k, the sentence stating it)
SWEEP: list[tuple[str, Callable[[random.Random, int], str], str]] = [
    (
        "person",
        lambda r, k: f"{r.choice(FIRST)} {r.choice(LAST)}-{k}",
        "{} owns this module, so the change needs their review.",
    ),
    (
        "endpoint",
        lambda r, k: f"PATCH /v{k}/tenants/{{tenant_id}}/quota",
        "The handler is reached through {}.",
    ),
    (
        "config",
        lambda r, k: f"quota.tier{k}.burst_limit",
        "The knob that governs it is {} in values.yaml.",
    ),
    (
        "quoted",
        lambda r, k: f"Quota exceeded for tier {k}, contact your admin.",
        'Users then see the message "{}"',
    ),
    ("phone", lambda r, k: f"+44 20 7946 {k:04d}", "The vendor's support line for this is {}."),
    (
        "shortcut",
        lambda r, k: f"Ctrl+Alt+{chr(65 + k % 26)}",
        "In the admin console, {} opens this panel.",
    ),
    (
        "sql",
        lambda r, k: f"quota_events_{k}",
        "The counters are written to the table {} by the worker.",
    ),
    ("verconstraint", lambda r, k: f"redis-py>=5.{k % 9},<6", "It needs {} to work."),
    (
        "figure",
        lambda r, k: f"{k}.{r.randint(1, 9)}% of requests",
        "Under load, {} were throttled.",
    ),
    ("backticked(control)", lambda r, k: f"quota_guard_{k}", "The guard is `{}`."),
    ("email(control)", lambda r, k: f"quota-team-{k}@example.com", "Questions go to {}."),
]


def sweep(out: Path) -> list[Path]:
    """Sixty-six modules read one by one, each reply stating the next kind's fact."""
    s = PlantedSession("late-sweep-912", 912, "You are a coding agent on the quota service.")
    r = s.r
    s.user("We are auditing the quota service today. Walk through the modules one by one.")
    s.say("Sure, starting with the first module.")
    for k in range(66):
        kind, value, template = SWEEP[k % len(SWEEP)]
        v = value(r, k)
        path = f"services/quota/mod_{k}.py"
        s.user(f"Module {k}: what does {path} do, and anything I should know?")
        for _ in range(r.randint(1, 2)):
            s.call("Reading it.", "read_file", {"path": path}, s.code(path, r.randint(50, 110)))
        reply = (
            f"{path} batches quota updates. " + template.format(v) + f" {s.words(12).capitalize()}."
        )
        s.plant("sweep_" + kind, "agent", v)
        s.say(reply)
    s.user(
        "That's all for today; list every owner, endpoint, key, message, phone and table you "
        "mentioned."
    )
    s.say("Here is the list.")
    return s.write(out)
