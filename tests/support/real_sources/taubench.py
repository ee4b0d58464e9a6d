"""tau-bench `historical_trajectories/*.json` into the shared transcript format.

    python -m tests.support.real_sources.taubench MIRROR_GIT_DIR OUT_DIR
        [--commit C] [--file NAME ...] [--longest N] [--index I ...]

Each file is a list of runs `{task_id, reward, info, traj, trial}`; `traj` is the OpenAI chat
the agent saw: a `system` message (the domain policy, kept in meta as `system`), user turns
written by an LLM user simulator, assistant turns (`content` may be null) with `tool_calls`,
and `tool` messages answering them. Calls become `tool_use` blocks (their JSON arguments
parsed), each `tool` message a `tool_result`; results and the user turn after them share
one user message. Repeated call ids are made unique (`_2`, …; count in meta). Tool
definitions are not in the file: the loader synthesises them from the names used.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.support.real_sources.common import (
    Record,
    content_blocks,
    merged,
    tool_result,
    tool_use,
    unique_ids,
    write_session,
)

REPO = "sierra-research/tau-bench"
COMMIT = "59a200c6d575d595120f1cb70fea53cef0632f6b"
FILES = ("gpt-4o-airline", "gpt-4o-retail", "sonnet-35-new-airline", "sonnet-35-new-retail")
MODELS = {"gpt-4o": "gpt-4o", "sonnet-35-new": "claude-3-5-sonnet-20241022"}


def convert_run(run: dict[str, Any]) -> tuple[list[Record], str | None, int]:
    """The run's messages, its system prompt and how many call ids were renamed."""
    system: str | None = None
    records: list[Record] = []
    for message in run["traj"]:
        role = message.get("role")
        if role == "system":
            system = str(message.get("content") or "")
        elif role == "user":
            records.append({"role": "user", "content": content_blocks(message.get("content"))})
        elif role == "assistant":
            blocks = content_blocks(message.get("content"))
            for call in message.get("tool_calls") or []:
                function = call.get("function", {})
                blocks.append(tool_use(call["id"], function["name"], function.get("arguments")))
            records.append({"role": "assistant", "content": blocks})
        elif role == "tool":
            result = tool_result(str(message["tool_call_id"]), message.get("content") or "")
            records.append({"role": "user", "content": [result]})
    records = merged(records)
    renamed = unique_ids(records)
    return records, system, renamed


def runs(mirror: str, commit: str, name: str) -> list[dict[str, Any]]:
    """The runs of `historical_trajectories/NAME.json` at `commit` of the bare mirror."""
    path = f"{commit}:historical_trajectories/{name}.json"
    shown = subprocess.run(["git", "-C", mirror, "show", path], capture_output=True, check=True)
    loaded: list[dict[str, Any]] = json.loads(shown.stdout)
    return loaded


def longest(loaded: Sequence[dict[str, Any]], count: int) -> list[int]:
    """The indexes of the `count` longest runs: most messages, then most characters."""

    def size(index: int) -> tuple[int, int]:
        traj = loaded[index]["traj"]
        return len(traj), len(json.dumps(traj))

    return sorted(sorted(range(len(loaded)), key=size, reverse=True)[:count])


def write_run(
    folder: Path, name: str, index: int, run: dict[str, Any], commit: str
) -> tuple[Path, int]:
    """Writes one run as `taubench-NAME-iINDEX`; returns its path and message count."""
    records, system, renamed = convert_run(run)
    prefix = next((p for p in MODELS if name.startswith(p)), "")
    meta: dict[str, Any] = {
        "format": "tau-bench historical_trajectories",
        "task_id": run.get("task_id"),
        "reward": run.get("reward"),
        "trial": run.get("trial"),
        "system": system,
        "model": MODELS.get(prefix),
        "renamed_tool_use_ids": renamed,
        "source": {
            "repo": REPO,
            "path": f"historical_trajectories/{name}.json",
            "index": index,
            "commit": commit,
            "license": "MIT",
        },
    }
    return write_session(folder, f"taubench-{name}-i{index}", records, meta), len(records)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("mirror")
    parser.add_argument("out")
    parser.add_argument("--commit", default=COMMIT)
    parser.add_argument("--file", action="append", choices=FILES, dest="files")
    parser.add_argument("--longest", type=int, default=6)
    parser.add_argument("--index", type=int, action="append", dest="indexes")
    options = parser.parse_args(argv)
    folder = Path(options.out)
    status = 0
    for name in options.files or FILES:
        try:
            loaded = runs(options.mirror, options.commit, name)
        except subprocess.CalledProcessError as error:
            print(f"{name}: not in the mirror ({error.stderr.decode().strip()})", file=sys.stderr)
            status = 1
            continue
        chosen = options.indexes or longest(loaded, options.longest)
        for index in chosen:
            path, count = write_run(folder, name, index, loaded[index], options.commit)
            print(f"{path}\t{count} messages")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
