"""Converters from public agent logs to the transcript format `abridged simulate` reads.

Each module turns one source's captures (BookMinder's Claude Code console captures,
tau-bench, moatless-tools and SWE-agent trajectories) into one JSON message per line
(`role`, `content` blocks of `text`, `tool_use` and `tool_result`) with an `X.meta.json`
sidecar recording where the capture came from. They run on a local copy of the source; the
tests give them small synthetic captures.
"""
