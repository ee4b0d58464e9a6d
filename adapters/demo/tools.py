"""What the demo agent is given: its model, its system prompt and its tool definitions."""

from __future__ import annotations

from abridged.domain.messages import JSON

DEMO_MODEL = "claude-sonnet-4-5"
"""The model the demo session is attributed to."""

SYSTEM_PROMPT = """\
You are Quill, a coding agent working in a checked-out git repository on the user's machine.
You help with software engineering tasks: fixing bugs, adding features, refactoring, running
tests and explaining code.

# Environment
- Working directory: /home/dev/quillmark (a Python 3.12 project managed with pip and a .venv)
- Platform: linux. Shell: bash. Today's date: 2025-03-04.
- The repository is `quillmark`, a CommonMark-compliant Markdown to HTML library with a CLI.

# How to work
- Read before you edit. Never guess file contents: use read_file or search_code first.
- Keep changes minimal and in the style of the surrounding code. Do not reformat unrelated code.
- After each change, run the relevant tests with run_command (`.venv/bin/pytest ...`). Before
  you say a task is done, run the whole suite, `ruff check` and `mypy`.
- When several calls do not depend on each other, make them in the same message.
- If a command fails, read the error and fix the cause; do not retry the same command blindly.
- Never commit unless the user asks. Never push. Never use `git reset --hard` or `--force`.

# Tone
- Be concise. Explain what you changed and why in a few sentences at the end of each task.
- Answer in the language the user writes in.
- Refer to code as `path:line` so the user can jump to it.
"""


def demo_tools() -> tuple[dict[str, JSON], ...]:
    """The four tool definitions of the demo agent, in Anthropic's shape (fresh copies)."""
    return (
        {
            "name": "read_file",
            "description": (
                "Read a text file of the repository. Lines are numbered from 1, as `cat -n` "
                "prints them. For a large file, pass `offset` and `limit` to read a part."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "Path of the file, relative to the repository root.",
                    },
                    "offset": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "First line to read (1-based). Default: 1.",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 2000,
                        "description": "How many lines to read. Default: the whole file.",
                    },
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        },
        {
            "name": "run_command",
            "description": (
                "Run a shell command in the repository and return its combined stdout and "
                "stderr. A non-zero exit status is reported as an error."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The bash command line."},
                    "timeout_seconds": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 600,
                        "default": 120,
                        "description": "Kill the command after this many seconds.",
                    },
                    "cwd": {
                        "type": "string",
                        "description": "Directory to run in, relative to the repository root.",
                    },
                },
                "required": ["command"],
                "additionalProperties": False,
            },
        },
        {
            "name": "search_code",
            "description": (
                "Search the repository's files for a regular expression (ripgrep syntax). "
                "Returns matching lines as `path:line:text`."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The regular expression."},
                    "path": {
                        "type": "string",
                        "description": "File or directory to search. Default: the whole repo.",
                    },
                    "glob": {
                        "type": "string",
                        "description": "Only search files matching this glob, e.g. `*.py`.",
                    },
                    "case_sensitive": {"type": "boolean", "default": True},
                    "max_results": {"type": "integer", "minimum": 1, "default": 200},
                },
                "required": ["pattern"],
                "additionalProperties": False,
            },
        },
        {
            "name": "edit_file",
            "description": (
                "Replace `old_string` by `new_string` in a file. `old_string` must occur "
                "exactly once unless `replace_all` is true. An empty `old_string` creates the "
                "file with `new_string` as its content."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the repo root."},
                    "old_string": {"type": "string", "description": "The exact text to replace."},
                    "new_string": {"type": "string", "description": "The replacement text."},
                    "replace_all": {"type": "boolean", "default": False},
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": False,
            },
        },
    )
