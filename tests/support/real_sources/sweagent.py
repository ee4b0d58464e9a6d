"""SWE-agent `.traj` files into the shared transcript format.

    python -m tests.support.real_sources.sweagent MIRROR_GIT_DIR OUT_DIR
        [--commit C] [--path P ...] [--all] [--list]

A trajectory's `history` is the exact chat sent to the model: a `system` message (kept in
meta as `system`), the task as a user message, then either function calls (assistant
messages with `tool_calls`, answered by `tool` messages naming their `tool_call_ids`) or,
in the older text formats, assistant messages whose text holds the thought and the command,
answered by user messages holding the observation. Calls become `tool_use` blocks, answers
`tool_result` blocks; consecutive messages of one role are joined. Repeated call ids are made
unique (`_2`, …; count in meta). By default the function-calling trajectories of the
mirror are converted; `--all` converts the text ones too; `--list` prints what there is.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
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

REPO = "SWE-agent/SWE-agent"
COMMIT = "3ea751c087f32b16e039a2233dd6eefecef325d5"


def is_function_calling(trajectory: dict[str, Any]) -> bool:
    """Whether the history holds function calls."""
    return any(m.get("tool_calls") for m in trajectory.get("history", []))


def convert(trajectory: dict[str, Any]) -> tuple[list[Record], str | None, int]:
    """The history's messages, its system prompt and how many call ids were renamed."""
    system: str | None = None
    records: list[Record] = []
    pending: list[str] = []
    for message in trajectory.get("history", []):
        role = message.get("role")
        if role == "system":
            system = str(message.get("content") or "")
        elif role == "assistant":
            blocks = content_blocks(message.get("content"))
            calls = message.get("tool_calls") or []
            for call in calls:
                function = call.get("function", {})
                blocks.append(tool_use(call["id"], function["name"], function.get("arguments")))
            pending = [str(call["id"]) for call in calls]
            records.append({"role": "assistant", "content": blocks})
        elif role == "tool":
            answered = [str(i) for i in message.get("tool_call_ids") or []] or pending[:1]
            content = message.get("content") or ""
            blocks = [tool_result(ident, content) for ident in answered[:1]]
            blocks += [tool_result(ident, "(see the first result)") for ident in answered[1:]]
            pending = [i for i in pending if i not in answered]
            records.append({"role": "user", "content": blocks})
        elif role == "user":
            records.append({"role": "user", "content": content_blocks(message.get("content"))})
    records = merged(records)
    renamed = unique_ids(records)
    return records, system, renamed


def session_name(path: str) -> str:
    """`sweagent-STEM-HASH`: the file's stem and six hex digits of its path (several
    trajectories share a stem)."""
    stem = re.sub(r"[^\w.-]+", "-", Path(path).stem)[:40]
    return f"sweagent-{stem}-{hashlib.sha1(path.encode()).hexdigest()[:6]}"


def _git(mirror: str, *args: str) -> bytes:
    return subprocess.run(["git", "-C", mirror, *args], capture_output=True, check=True).stdout


def trajectories(mirror: str, commit: str) -> list[str]:
    """The paths of every `.traj` file of the commit."""
    names = _git(mirror, "ls-tree", "-r", "--name-only", commit).decode().splitlines()
    return [name for name in names if name.endswith(".traj")]


def load(mirror: str, commit: str, path: str) -> dict[str, Any]:
    """One trajectory."""
    loaded: dict[str, Any] = json.loads(_git(mirror, "show", f"{commit}:{path}"))
    return loaded


def write_trajectory(folder: Path, trajectory: dict[str, Any], path: str, commit: str) -> Path:
    """Writes one trajectory (`session_name`) and its meta."""
    records, system, renamed = convert(trajectory)
    info = trajectory.get("info") or {}
    meta: dict[str, Any] = {
        "format": "SWE-agent .traj history",
        "function_calling": is_function_calling(trajectory),
        "info_model_stats": info.get("model_stats"),
        "exit_status": info.get("exit_status"),
        "system": system,
        "renamed_tool_use_ids": renamed,
        "source": {"repo": REPO, "path": path, "commit": commit, "license": "MIT"},
    }
    return write_session(folder, session_name(path), records, meta)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("mirror")
    parser.add_argument("out")
    parser.add_argument("--commit", default=COMMIT)
    parser.add_argument("--path", action="append", dest="paths")
    parser.add_argument("--all", action="store_true", help="text trajectories too")
    parser.add_argument("--list", action="store_true", help="print what there is")
    options = parser.parse_args(argv)
    for path in options.paths or trajectories(options.mirror, options.commit):
        trajectory = load(options.mirror, options.commit, path)
        calling = is_function_calling(trajectory)
        if options.list:
            kind = "function-calling" if calling else "text"
            print(path, kind, len(trajectory.get("history", [])), sep="\t")
        elif calling or options.all or options.paths:
            print(write_trajectory(Path(options.out), trajectory, path, options.commit))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
