"""The lines of a shell command that are commands, not a script it carries: the facts
ledger lists the paths they name (`abridged.domain.command_lines`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from abridged.domain.command_lines import LATER_LINES, command_lines


@pytest.mark.parametrize(
    ("command", "lines"),
    [
        ("cd repo\nnpx vitest run a.test.ts", ["cd repo", "npx vitest run a.test.ts"]),
        ("cd /srv && \\\n  kubectl logs deploy/w", ["cd /srv && \\", "kubectl logs deploy/w"]),
        ("cat > f.py <<'EOF'\nimport os\nEOF\npython f.py", ["cat > f.py <<'EOF'", "python f.py"]),
        ("cat <<-END >x\n\tbody/line\n\tEND\nls y", ["cat <<-END >x", "ls y"]),
        ('python -c "\nprint(1)\n"\nls after/it', ['python -c "', "ls after/it"]),
        ("echo 'a\nb'\nls c", ["echo 'a", "ls c"]),
        ('echo "it\'s" ; ls a/b\nls c/d', ['echo "it\'s" ; ls a/b', "ls c/d"]),
        ("ls a  # don't\nls b", ["ls a  # don't", "ls b"]),
        ('echo "a \\" b"\nls c', ['echo "a \\" b"', "ls c"]),
        ("\n\n  ls x  \n\n", ["ls x"]),
    ],
)
def test_the_command_lines_of_a_multi_line_command(command: str, lines: list[str]) -> None:
    assert command_lines(command) == lines


def test_at_most_the_first_and_twenty_more_lines_are_read() -> None:
    lines = command_lines("\n".join(f"ls dir/{k}" for k in range(100)))
    assert lines == [f"ls dir/{k}" for k in range(LATER_LINES + 1)]


@given(st.text(alphabet="ab/ \n'\"\\#<EOF-", min_size=1, max_size=80).filter(str.strip))
def test_the_first_line_is_always_the_commands_first_and_every_line_is_its_own(
    command: str,
) -> None:
    lines = command_lines(command)
    stripped = [line.strip() for line in command.splitlines()]
    assert lines[0] == next(line for line in stripped if line)
    assert all(line in stripped for line in lines)
    assert len(lines) <= LATER_LINES + 1
