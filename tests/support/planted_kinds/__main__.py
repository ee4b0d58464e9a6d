"""Write the planted-kinds sessions into a folder: `python -m tests.support.planted_kinds DIR`.

Every generator is seeded, so the files are the same on every run. Prints each path written.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.planted_kinds import write_all


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tests.support.planted_kinds DIR", file=sys.stderr)
        return 2
    for path in write_all(Path(args[0])):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
