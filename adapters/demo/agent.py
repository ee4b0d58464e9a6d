"""The demo agent: it writes the session's messages, one tool call round trip at a time."""

from __future__ import annotations

import difflib
import random
import string
from collections.abc import Sequence

import attrs

from abridged.adapters.demo.outputs import FailingTest, pytest_log
from abridged.adapters.demo.repository import Repo
from abridged.domain.messages import JSON, Block, Message, TextBlock, ToolResultBlock, ToolUseBlock

_OUTPUT_LIMIT = 40_000
"""The run_command tool shows at most this many characters of an output."""
_ID_ALPHABET = string.ascii_letters + string.digits


@attrs.frozen
class ToolCall:
    """One call of a tool, with the output the agent gets back."""

    name: str
    input: dict[str, JSON]
    output: str
    is_error: bool = False


class Agent:
    """Appends the messages of the session, one step (a call round trip) at a time."""

    def __init__(self, rng: random.Random, repo: Repo) -> None:
        self.rng = rng
        self.repo = repo
        self.messages: list[Message] = []
        self._ids: set[str] = set()
        self._changed: dict[str, str] = {}
        self.listed = False
        self.seen: set[str] = set()
        self.done: list[tuple[str, str]] = []
        self.preamble = ""

    def ask(self, text: str) -> None:
        self.messages.append(Message.user(self.preamble + text))
        self.preamble = ""
        self._changed = {}
        self.seen = set()

    def step(self, thought: str | None, *calls: ToolCall, remark: str | None = None) -> None:
        uses = [ToolUseBlock(self._new_id(), call.name, call.input) for call in calls]
        content: list[Block] = [TextBlock(thought)] if thought else []
        self.messages.append(Message.assistant(*content, *uses))
        results: list[Block] = [
            ToolResultBlock(use.id, call.output, call.is_error)
            for use, call in zip(uses, calls, strict=True)
        ]
        if remark:
            results.append(TextBlock(remark))
        self.messages.append(Message.user(*results))

    def answer(self, text: str) -> None:
        self.messages.append(Message.assistant(text))

    def maybe(self, thought: str) -> str | None:
        """Real agents often call a tool without a word; keep about two thirds of thoughts."""
        return thought if self.rng.random() < 0.68 else None

    def _new_id(self) -> str:
        while True:
            tool_id = "toolu_01" + "".join(self.rng.choices(_ID_ALPHABET, k=22))
            if tool_id not in self._ids:
                self._ids.add(tool_id)
                return tool_id

    def read(self, path: str, offset: int | None = None, limit: int | None = None) -> ToolCall:
        arguments: dict[str, JSON] = {"path": path}
        if offset is not None:
            arguments["offset"] = offset
        if limit is not None:
            arguments["limit"] = limit
        text = self.repo.read(path, offset, limit)
        if text is None:
            return ToolCall("read_file", arguments, f"Error: file not found: {path}", True)
        return ToolCall("read_file", arguments, text or "(empty file)")

    def run(self, command: str, output: str, *, status: int = 0, timeout: int = 0) -> ToolCall:
        arguments: dict[str, JSON] = {"command": command}
        if timeout:
            arguments["timeout_seconds"] = timeout
        if len(output) > _OUTPUT_LIMIT:
            # Like real agent harnesses, keep the head and the tail of a huge output: the
            # tail is where test summaries and tracebacks end up.
            head = output[: output.rfind("\n", 0, _OUTPUT_LIMIT // 2)]
            tail = output[output.find("\n", len(output) - _OUTPUT_LIMIT // 2) + 1 :]
            omitted = len(output) - len(head) - len(tail)
            output = f"{head}\n\n[... {omitted} characters omitted ...]\n\n{tail}"
        if status:
            output = f"{output}\n\n[exit status {status}]"
        return ToolCall("run_command", arguments, output or "(no output)", status != 0)

    def search(self, pattern: str, suffix: str = "", limit: int = 200) -> ToolCall:
        arguments: dict[str, JSON] = {"pattern": pattern}
        if suffix:
            arguments["glob"] = f"*{suffix}"
        hits = self.repo.search(pattern, suffix)
        lines = [f"{path}:{n}:{line}" for path, n, line in hits[:limit]]
        if len(hits) > limit:
            arguments["max_results"] = limit
            lines.append(f"[{len(hits) - limit} more matches not shown]")
        return ToolCall("search_code", arguments, "\n".join(lines) or "No matches found.")

    def edit(self, path: str, old: str, new: str) -> ToolCall:
        arguments: dict[str, JSON] = {"path": path, "old_string": old, "new_string": new}
        current = self.repo.files.get(path)
        if not old:
            self._changed.setdefault(path, "")
            self.repo.files[path] = new
            return ToolCall(
                "edit_file", arguments, f"Created {path} ({len(new.splitlines())} lines)."
            )
        if current is None:
            return ToolCall("edit_file", arguments, f"Error: file not found: {path}", True)
        found = current.count(old)
        if found != 1:
            problem = (
                "old_string was not found in the file. Read the file again: whitespace and "
                "indentation must match exactly."
                if found == 0
                else f"old_string occurs {found} times; give more context or set replace_all."
            )
            return ToolCall("edit_file", arguments, f"Error editing {path}: {problem}", True)
        self._changed.setdefault(path, current)
        self.repo.files[path] = current.replace(old, new)
        first = self.repo.line_of(path, new)
        shown = self.repo.read(path, max(1, first - 3), len(new.splitlines()) + 6) or ""
        return ToolCall(
            "edit_file",
            arguments,
            f"The file {path} has been edited. Here is `cat -n` of the edited part:\n{shown}",
        )

    @property
    def changed(self) -> list[str]:
        """The files changed since the last request."""
        return sorted(self._changed)

    def diff(self) -> str:
        """`git diff` of the files changed since the last request."""
        parts: list[str] = []
        for path, before in self._changed.items():
            after = self.repo.files[path]
            parts.append(f"diff --git a/{path} b/{path}")
            parts += difflib.unified_diff(
                before.splitlines(), after.splitlines(), f"a/{path}", f"b/{path}", lineterm=""
            )
        return "\n".join(parts)

    def pytest(
        self,
        target: str,
        failures: Sequence[FailingTest] = (),
        *,
        verbose: bool = False,
        only: Sequence[str] = (),
    ) -> ToolCall:
        """Run pytest on `target`; `only` restricts the collected ids (default: all under it)."""
        ids = list(only) or [t for t in self.repo.test_ids() if t.startswith(target)]
        failed = {f.test_id for f in failures}
        ids = sorted({*ids, *failed})
        seconds = self.rng.uniform(0.3, 0.9) + len(ids) * 0.009
        command = f".venv/bin/pytest {target} {'-v' if verbose else '-q'}"
        out = pytest_log(
            self.rng, ids, failures, verbose=verbose, seconds=seconds, line_of=self.repo.line_of
        )
        return self.run(command, out, status=1 if failures else 0)
