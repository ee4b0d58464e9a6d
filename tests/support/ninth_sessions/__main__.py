"""Write the seven sessions into a folder: `python -m tests.support.ninth_sessions DIR`.

Every generator is seeded, so the files are the same on every run. Prints each path written.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from tests.support.ninth_sessions.crm import crm_renewals
from tests.support.ninth_sessions.ecommerce import ecommerce_es_pt
from tests.support.ninth_sessions.kubernetes import k8s_claude_code
from tests.support.ninth_sessions.legal import legal_research
from tests.support.ninth_sessions.notebook import notebook_pandas
from tests.support.ninth_sessions.research import research_browsing
from tests.support.ninth_sessions.review import code_review_thinking

GENERATORS: tuple[Callable[[Path], list[Path]], ...] = (
    notebook_pandas,
    crm_renewals,
    k8s_claude_code,
    legal_research,
    ecommerce_es_pt,
    code_review_thinking,
    research_browsing,
)


def write_all(out_dir: Path) -> list[Path]:
    """Write every session into `out_dir` (created if missing); the paths written, in order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [path for generate in GENERATORS for path in generate(out_dir)]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tests.support.ninth_sessions DIR", file=sys.stderr)
        return 2
    for path in write_all(Path(args[0])):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
