"""The command line the docs describe is the code's, read from click when the test runs:
README.md's synopsis names every command and every option of each (and no other), with
click's choices, and docs/serving.md's flag table lists every `abridged serve` option with
its default."""

from __future__ import annotations

import re

import click
import pytest

from abridged.adapters.cli import main
from tests.support.docs import ROOT, blocks, pages
from tests.unit.test_docs_settings import tables

README = ROOT / "README.md"
SERVING = ROOT / "docs" / "serving.md"
FLAG = re.compile(r"(?<![\w-])--[a-z][\w-]*")


def options(command: click.Command, *, nested: bool = True) -> dict[str, click.Option]:
    """A command's options by their long flag (a group's: its subcommands' too, unless
    `nested` is false)."""
    found = {
        flag: param
        for param in command.params
        if isinstance(param, click.Option)
        for flag in param.opts
        if flag.startswith("--") and flag != "--help"
    }
    if nested and isinstance(command, click.Group):
        for sub in command.commands.values():
            found |= options(sub)
    return found


def synopsis() -> dict[str, str]:
    """README.md's synopsis block: each command's entry, continuation lines joined."""
    block = next(b for b in blocks(README) if b.info.startswith("text illustration: the synopsis"))
    entries: dict[str, str] = {}
    name = ""
    for line in block.code.splitlines():
        started = re.match(r"abridged (--[\w-]+|[a-z][\w-]*)", line)
        if started:
            name = started.group(1)
            entries[name] = entries.get(name, "") + line.partition("#")[0]
        elif line.startswith(" ") and name:
            entries[name] += " " + line.strip()
    return entries


def synopsis_problems(entries: dict[str, str]) -> list[str]:
    found = []
    for name, command in main.commands.items():
        if name not in entries:
            found.append(f"the synopsis has no `abridged {name}`")
            continue
        stated = set(FLAG.findall(entries[name]))
        known = options(command)
        found += [f"{name}: {flag} is not in the synopsis" for flag in sorted(set(known) - stated)]
        found += [f"{name}: {flag} is not an option" for flag in sorted(stated - set(known))]
        for flag, choices in re.findall(r"(--[\w-]+) ([\w-]+(?:\|[\w-]+)+)", entries[name]):
            kind = known[flag].type if flag in known else None
            if isinstance(kind, click.Choice) and choices.split("|") != list(kind.choices):
                found.append(f"{name}: {flag} takes {'|'.join(map(str, kind.choices))}")
    for flag in options(main, nested=False):
        if flag not in entries:
            found.append(f"the synopsis has no `abridged {flag}`")
    return found


def test_the_readme_synopsis_names_every_command_and_option() -> None:
    problems = synopsis_problems(synopsis())
    assert not problems, "\n".join(problems)


def test_a_missing_or_made_up_option_is_caught() -> None:
    entries = synopsis()
    entries["sessions"] = entries["sessions"].replace("--cursor", "--curser")
    entries["replay"] = entries["replay"].replace("auto|abridged", "abridged")
    del entries["--debug"]
    assert len(synopsis_problems(entries)) == 4


SERVE_DEFAULTS = {
    # The table's default cell, as the docs write it, for the option's default.
    "--db": "`$ABRIDGED_DB` or `abridged.sqlite3`",
    "--token": "none",
}


def serve_flag_table() -> dict[str, str]:
    for heading, header, rows in tables(SERVING):
        if heading == "Running it" and header[:2] == ["flag", "default"]:
            return {flag: row[1] for row in rows for flag in FLAG.findall(row[0])}
    raise AssertionError("docs/serving.md has no flag table under 'Running it'")


def stated_default(cell: str) -> str:
    """`a`, `b` → the first value of a cell that gives two (`--host`, `--port`)."""
    first = cell.split("`, `", maxsplit=1)[0]
    return re.sub(r"[`,]| s$| \(.*\)$", "", first)


@pytest.mark.parametrize("flag", sorted(options(main.commands["serve"])))
def test_the_serving_flag_table_states_each_option_and_its_default(flag: str) -> None:
    table = serve_flag_table()
    assert flag in table, f"docs/serving.md does not list {flag}"
    option = options(main.commands["serve"])[flag]
    cell = table[flag]
    if flag in SERVE_DEFAULTS:
        assert cell.startswith(SERVE_DEFAULTS[flag]), (flag, cell)
        return
    if option.multiple:  # repeatable: none by default (`--set` shares `--preset`'s row)
        return
    if option.envvar:
        assert cell.startswith(f"`${option.envvar}` or "), (flag, cell)
        cell = cell.removeprefix(f"`${option.envvar}` or ")
    if flag == "--port":
        cell = cell.split("`, `")[1]
    default = option.default
    shown = stated_default(cell)
    if option.is_flag:
        assert shown == ("on" if default else "off"), (flag, cell)
    elif default is None:
        assert shown in ("the model's", "none"), (flag, cell)
    elif isinstance(default, float | int) and not isinstance(default, bool):
        assert float(shown) == default, (flag, cell)
    else:
        assert shown == str(default), (flag, cell)


def test_the_serving_flag_table_lists_no_other_option() -> None:
    unknown = set(serve_flag_table()) - set(options(main.commands["serve"]))
    assert not unknown, unknown


HISTORY_LINE = re.compile(r" *(?P<version>\d+)  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  (?P<event>\w+) *")


def test_the_history_lines_the_docs_show_are_in_the_format_history_prints() -> None:
    # Every example had lost the time column `abridged history` prints.
    from abridged.domain.session import Session

    events = {name for name in dir(Session) if isinstance(getattr(Session, name), type)}
    shown = [
        (block.label, line)
        for page in pages()
        for block in blocks(page)
        if block.info.startswith("text output") and "abridged history" in block.info
        for line in block.code.splitlines()
        if line.strip() and not line.startswith(" " * 8)  # a summary's text is indented
    ]
    assert shown
    for label, line in shown:
        match = HISTORY_LINE.match(line)
        assert match, f"{label}: {line!r} is not a line `abridged history` prints"
        assert match["event"] in events, f"{label}: no event {match['event']}"
