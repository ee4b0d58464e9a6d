"""Write the fourteen sessions into a folder: `python -m tests.support.fourteen_sessions DIR`.

Every generator is seeded, so the files are the same on every run. Prints each path written.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from tests.support.fourteen_sessions.browser import browser
from tests.support.fourteen_sessions.chats import quick_chat, telco_plans
from tests.support.fourteen_sessions.ci import proxy_recorded
from tests.support.fourteen_sessions.coding import audit_fanout, gh_triage
from tests.support.fourteen_sessions.documents import contract, handover
from tests.support.fourteen_sessions.finance import sheets_close
from tests.support.fourteen_sessions.infra import tf_migrate
from tests.support.fourteen_sessions.notebook import notebook
from tests.support.fourteen_sessions.ops import sre_incident
from tests.support.fourteen_sessions.support import eu_returns, ja_shop

GENERATORS: tuple[Callable[[Path], list[Path]], ...] = (
    sre_incident,
    ja_shop,
    sheets_close,
    gh_triage,
    browser,
    telco_plans,
    contract,
    notebook,
    tf_migrate,
    quick_chat,
    handover,
    audit_fanout,
    eu_returns,
    proxy_recorded,
)


def write_all(out_dir: Path) -> list[Path]:
    """Write every session into `out_dir` (created if missing); the paths written, in order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [path for generate in GENERATORS for path in generate(out_dir)]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tests.support.fourteen_sessions DIR", file=sys.stderr)
        return 2
    for path in write_all(Path(args[0])):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
