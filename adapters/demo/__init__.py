"""A generated coding-agent session for `abridged demo`: no shared data, no API key needed.

`demo_transcript` plays a coding agent at work on `quillmark`, an imaginary Markdown library:
several requests, each followed by many tool calls (some in parallel), tool outputs from one
line to tens of kilobytes, failing commands, edits, short reasoning between calls and a closing
answer. The repository it works on is generated too, and edits change it, so a file read after
an edit shows the edit. The same seed always gives the same transcript.

- `session`: the plan of requests and the transcript they make;
- `tools`: the model, system prompt and tool definitions the agent is given;
- `anchor_scenarios`, `feature_scenarios`, `maintenance_scenarios`: the requests themselves;
- `moves`: what every request repeats (getting oriented, exploring, the final checks);
- `agent`: writes the messages, runs the calls against the repository;
- `outputs`: what the commands print (pytest, git, a profile, a CI log);
- `repository`, `codegen`, `sources`: the imaginary repository and its files.
"""

from __future__ import annotations

from abridged.adapters.demo.session import demo_transcript
from abridged.adapters.demo.tools import DEMO_MODEL, SYSTEM_PROMPT, demo_tools

__all__ = ["DEMO_MODEL", "SYSTEM_PROMPT", "demo_tools", "demo_transcript"]
