"""moatless-tools `trajectory.json` into the shared transcript format.

    python -m tests.support.real_sources.moatless MIRROR_GIT_DIR OUT_DIR
        [--commit C] [--evaluation DIR] [--instance ID ...] [--list] [--deepest]

A trajectory is a search tree of `nodes` (`node_id`, `parent_id`); each node's
`completions.build_action` holds the request moatless sent to the Anthropic API for it
(`input`: the Messages list, byte for byte), the reply (`response`) and its `usage`. The
node with the largest request is taken (`--deepest`: the deepest node), as the shared
transcripts were: its messages are written as they are (a string content becomes one text
block); the system prompt (`agent.system_prompt`), the model, the reply and the reported
usage go to meta. Some requests repeat a call id or send two user messages in a row (the API
accepted both): a repeated id gets `_2`, `_3`, … and consecutive messages of one role are
joined (counts in meta), so the result is valid under the strict rules. Tool definitions
were not stored: the loader synthesises them from the names used. `--list` prints, per
trajectory in the mirror, the chosen request's size, for choosing a selection.
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
    stats,
    unique_ids,
    write_session,
)

REPO = "aorwall/moatless-tools"
COMMIT = "91f874186e8298e5270c00a334c7a962bb4cdfad"
EVALUATION = "evaluations/20241117_moatless_claude_3_5_sonnet_20241022"


def chosen_node(trajectory: dict[str, Any], *, deepest: bool = False) -> dict[str, Any] | None:
    """The node whose request is the largest (in characters), as the shared transcripts
    were chosen; with `deepest`, the node farthest from the root that holds a request (of
    nodes equally deep, the one whose request has the most messages). They differ where
    the search went back up the tree or moatless shortened the history."""
    nodes = {node["node_id"]: node for node in trajectory.get("nodes", [])}

    def depth(node: dict[str, Any]) -> int:
        steps = 0
        while node.get("parent_id") is not None and node["parent_id"] in nodes:
            node = nodes[node["parent_id"]]
            steps += 1
        return steps

    candidates = [node for node in nodes.values() if _request(node) is not None]
    if not candidates:
        return None
    chosen: dict[str, Any]
    if deepest:
        chosen = max(candidates, key=lambda n: (depth(n), len(_messages(n)), n["node_id"]))
    else:
        chosen = max(candidates, key=lambda n: (len(json.dumps(_messages(n))), n["node_id"]))
    return chosen


def _messages(node: dict[str, Any]) -> list[Any]:
    return list((_request(node) or {}).get("input", []))


def _request(node: dict[str, Any]) -> dict[str, Any] | None:
    build = (node.get("completions") or {}).get("build_action") or {}
    return build if isinstance(build.get("input"), list) and build["input"] else None


def convert(
    trajectory: dict[str, Any], *, deepest: bool = False
) -> tuple[list[Record], dict[str, Any]]:
    """The chosen node's request messages (`chosen_node`) and what goes to meta about it."""
    node = chosen_node(trajectory, deepest=deepest)
    if node is None:
        raise ValueError("no node holds a request")
    build = _request(node) or {}
    records: list[Record] = []
    for message in build["input"]:
        blocks = message["content"]
        content = blocks if isinstance(blocks, list) else content_blocks(blocks)
        records.append({"role": message["role"], "content": content})
    joined = len(records)
    records = merged(records)
    joined -= len(records)
    renamed = unique_ids(records)
    agent = trajectory.get("agent", {})
    metadata = trajectory.get("metadata", {})
    meta: dict[str, Any] = {
        "format": "moatless-tools trajectory.json",
        "system": agent.get("system_prompt"),
        "model": build.get("model") or agent.get("completion", {}).get("model"),
        "instance_id": metadata.get("instance_id"),
        "evaluation_name": metadata.get("evaluation_name"),
        "node_id": node["node_id"],
        "renamed_tool_use_ids": renamed,
        "joined_messages": joined,
        "request_usage_reported": build.get("usage"),
        "api_response_to_this_request": build.get("response"),
        "note": "messages are the exact request body `messages` that moatless sent to the "
        "Anthropic API for this node",
    }
    return records, meta


def _git(mirror: str, *args: str) -> bytes:
    return subprocess.run(["git", "-C", mirror, *args], capture_output=True, check=True).stdout


def instances(mirror: str, commit: str, evaluation: str) -> list[str]:
    """The instance ids with a `trajectory.json` whose blob the mirror holds."""
    listing = _git(mirror, "ls-tree", "-r", "-l", commit, evaluation).decode()
    found = []
    for line in listing.splitlines():
        info, _, path = line.partition("\t")
        if path.endswith("/trajectory.json") and info.split()[3].isdigit():
            found.append(path.split("/")[-2])
    return found


def load(mirror: str, commit: str, evaluation: str, instance: str) -> dict[str, Any]:
    """One instance's trajectory."""
    loaded: dict[str, Any] = json.loads(
        _git(mirror, "show", f"{commit}:{evaluation}/{instance}/trajectory.json")
    )
    return loaded


def write_instance(
    folder: Path, trajectory: dict[str, Any], path: str, commit: str, *, deepest: bool = False
) -> Path:
    """Writes `moatless-INSTANCE` for a loaded trajectory from `path`."""
    records, meta = convert(trajectory, deepest=deepest)
    meta["source"] = {"repo": REPO, "path": path, "commit": commit, "license": "MIT"}
    return write_session(folder, f"moatless-{meta['instance_id']}", records, meta)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("mirror")
    parser.add_argument("out")
    parser.add_argument("--commit", default=COMMIT)
    parser.add_argument("--evaluation", default=EVALUATION)
    parser.add_argument("--instance", action="append", dest="instances")
    parser.add_argument("--list", action="store_true", help="print sizes, write nothing")
    parser.add_argument("--deepest", action="store_true", help="the deepest node's request")
    options = parser.parse_args(argv)
    status = 0
    chosen = options.instances or instances(options.mirror, options.commit, options.evaluation)
    for instance in chosen:
        trajectory = load(options.mirror, options.commit, options.evaluation, instance)
        if options.list:
            try:
                figures = stats(convert(trajectory, deepest=options.deepest)[0])
            except ValueError as error:
                print(f"{instance}\t{error}")
                continue
            print(instance, *(f"{k}={v}" for k, v in figures.items()), sep="\t")
            continue
        path = f"{options.evaluation}/{instance}/trajectory.json"
        try:
            written = write_instance(
                Path(options.out), trajectory, path, options.commit, deepest=options.deepest
            )
        except ValueError as error:
            print(f"{instance}: not converted: {error}", file=sys.stderr)
            status = 1
            continue
        print(written)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
