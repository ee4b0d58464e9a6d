"""The settings the docs state are the code's, read from the code when the test runs: every
field of `CompactionSettings` with its type, default and range (docs/settings.md), the
presets, the derived limits, and every "default" or size column of any docs page's tables."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Any

import attrs
import pytest

from abridged.domain.errors import InvalidSettingsError
from abridged.domain.settings import (
    DEFAULT_WINDOW,
    MODEL_WINDOWS,
    PRESETS,
    CompactionSettings,
    Limits,
    settings_from,
)
from tests.support.docs import ROOT, page_id, pages

SETTINGS_PAGE = ROOT / "docs" / "settings.md"
FIELDS = {f.name: f for f in attrs.fields(CompactionSettings)}
DEFAULTS = CompactionSettings()
NAME = re.compile(r"`([a-z_]+)`")

# The limit each share sets, as `Limits` computes it.
LIMIT_OF = {
    "threshold_ratio": "threshold",
    "target_ratio": "target",
    "retained_share": "retained_tokens",
    "summary_share": "summary_tokens",
    "summaries_share": "summaries_tokens",
    "ledger_share": "ledger_tokens",
    "tool_output_share": "tool_output_tokens",
    "prune_protect_share": "prune_protect_tokens",
    "prune_min_share": "prune_min_tokens",
    "min_reduction_share": "min_reduction",
}


def tables(page: Path) -> list[tuple[str, list[str], list[list[str]]]]:
    """Each table of a page: the heading above it, its header cells and its rows."""
    found = []
    heading = ""
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("#"):
            heading = lines[i].lstrip("# ").strip()
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|--"):
            header = cells(lines[i])
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(cells(lines[i]))
                i += 1
            found.append((heading, header, rows))
            continue
        i += 1
    return found


def cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def table(page: Path, first_header: str, heading: str) -> list[list[str]]:
    for found_heading, header, rows in tables(page):
        if header[0] == first_header and found_heading == heading:
            return rows
    raise AssertionError(f"{page_id(page)} has no table '{first_header}' under '{heading}'")


def shown(value: object) -> str:
    """A value as the docs write it."""
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def type_name(annotation: object) -> str:
    """A field's type as the docs write it: literal choices are `str`."""
    if typing.get_origin(annotation) is typing.Literal:
        return "str"
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        kinds = [type_name(a) for a in typing.get_args(annotation) if a is not type(None)]
        return " or ".join(kinds) + " or None"
    if typing.get_origin(annotation) is dict:
        key, value = typing.get_args(annotation)
        return f"dict[{type_name(key)}, {type_name(value)}]"
    return getattr(annotation, "__name__", str(annotation))


def number(text: str) -> float | None:
    match = re.match(r"^-?[\d,]*\.?\d+", text.replace("`", "").strip())
    return float(match.group().replace(",", "")) if match else None


def test_the_settings_table_lists_every_field_in_order_with_its_type_and_default() -> None:
    rows = table(SETTINGS_PAGE, "field", "Every field")
    hints = typing.get_type_hints(CompactionSettings)
    assert [NAME.fullmatch(r[0]).group(1) for r in rows] == list(FIELDS)  # type: ignore[union-attr]
    for name, kind, default, *_ in rows:
        field = NAME.fullmatch(name).group(1)  # type: ignore[union-attr]
        assert kind == type_name(hints[field]), field
        assert default == f"`{shown(getattr(DEFAULTS, field))}`", field


def probe(field: str, value: object) -> str | None:
    """The message of the error a value of `field` gets on its own account, or `None`."""
    given: dict[str, Any] = {field: value}
    try:
        CompactionSettings(**given)
    except InvalidSettingsError as error:
        # A check between two fields (summary_share <= summaries_share) is not this range's.
        return str(error) if re.match(rf"{field}(\[.*?\])? must", str(error)) else None
    return None


def check_range(field: str, check: str) -> None:
    low_high = re.search(r"in ([(\[])([\d.]+), ([\d.]+)([)\]])", check)
    at_least = re.search(r"≥ (\d+)", check)
    at_most = re.search(r"≤ (\d+)", check)
    one_of = re.search(r"one of ((?:`[^`]+`(?:, )?)+)", check)
    if low_high:
        opening, low, high, closing = low_high.groups()
        low_value, high_value = float(low), float(high)
        assert (probe(field, low_value) is None) == (opening == "["), (field, check)
        assert (probe(field, high_value) is None) == (closing == "]"), (field, check)
        assert probe(field, low_value - 0.01) is not None, (field, check)
        assert probe(field, high_value + 0.01) is not None, (field, check)
        assert probe(field, (low_value + high_value) / 2) is None, (field, check)
    elif at_least:
        least = int(at_least.group(1))
        assert probe(field, least) is None, (field, check)
        assert probe(field, least - 1) is not None, (field, check)
    elif at_most:
        most = int(at_most.group(1))
        assert probe(field, most) is None, (field, check)
        assert probe(field, most + 1) is not None, (field, check)
    elif one_of:
        allowed = re.findall(r"`([^`]+)`", one_of.group(1))
        if field == "tool_policies":
            assert all(probe(field, {"bash": v}) is None for v in allowed), check
            assert probe(field, {"bash": "x"}) is not None, check
        else:
            assert all(probe(field, v) is None for v in allowed), (field, check)
            assert probe(field, "x") is not None, (field, check)
    else:
        raise AssertionError(f"cannot read the range of {field} in {check!r}")


def test_every_documented_range_is_the_validators() -> None:
    rows = table(SETTINGS_PAGE, "check", "Validation errors")
    ranged: set[str] = set()
    for check, _ in rows:
        condition = re.sub(r" \(`[^)]*\)", "", check)  # "(`settings_from`)" says where
        names = [n for n in NAME.findall(condition) if n in FIELDS]
        if len(names) == 2 and "≤" in condition:  # summary_share <= summaries_share
            continue
        for field in names:
            check_range(field, condition[condition.index(names[-1]) :])
            ranged.add(field)
    # Every field but the flags has a documented range.
    hints = typing.get_type_hints(CompactionSettings)
    unranged = {n for n in FIELDS if hints[n] is not bool} - ranged
    assert not unranged, f"fields whose range docs/settings.md does not state: {unranged}"


def raised_by(message: str) -> str:
    """The message the code gives for the input a documented example message names."""
    got = re.search(r"got (.+?)(?: \(.*\))?$", message)
    field = re.match(r"([a-z_]+)(?:\['(\w+)'\])? must", message)
    try:
        if field and got:
            value: Any = eval(got.group(1))  # the docs' own literal: 1.5, -1, 'x'
            if field.group(2):
                value = {field.group(2): value}
            CompactionSettings(**{field.group(1): value})
        elif message.startswith("summary_share ("):
            share, shares = re.findall(r"\(([\d.]+)\)", message)
            CompactionSettings(summary_share=float(share), summaries_share=float(shares))
        elif message.startswith("unknown settings: "):
            CompactionSettings.from_dict({message.removeprefix("unknown settings: "): 1})
        elif message.startswith("unknown preset "):
            settings_from(eval(message.split()[2].rstrip(";")))
        elif message.startswith("the context window"):
            Limits(int(message.rsplit(maxsplit=1)[-1]), 1, DEFAULTS)
        elif message.startswith("reserved output tokens"):
            window, reserved = re.findall(r"\d+", message)[-2:]
            Limits(int(window), int(reserved), DEFAULTS)
        else:
            raise AssertionError(f"no input known for the example {message!r}")
    except InvalidSettingsError as error:
        return str(error)
    return "(accepted)"


def test_every_example_message_is_the_codes() -> None:
    rows = table(SETTINGS_PAGE, "check", "Validation errors")
    for _, example in rows:
        message = example.strip("`")
        assert raised_by(message) == message


def test_the_presets_table_lists_what_each_preset_changes() -> None:
    rows = table(SETTINGS_PAGE, "preset", "Presets")
    assert [r[0].strip("`") for r in rows] == list(PRESETS)
    for name, differences in rows:
        preset = PRESETS[name.strip("`")]
        expected = {
            f"{f}={shown(getattr(preset, f))}"
            for f in FIELDS
            if getattr(preset, f) != getattr(DEFAULTS, f)
        }
        stated = set() if differences == "nothing" else set(re.findall(r"`([^`]+)`", differences))
        assert stated == expected, name


DERIVED = {
    "budget": "budget",
    "threshold": "threshold",
    "recent tail's room": "recent_tokens",
    "kept verbatim at most": "retained_tokens",
    "one summary chunk": "summary_tokens",
    "all summary chunks": "summaries_tokens",
    "facts ledger, at most": "ledger_tokens",
    "one message's tool outputs": "tool_output_tokens",
    "protected recent outputs": "prune_protect_tokens",
    "smallest prune move": "prune_min_tokens",
    "smallest useful compaction": "min_reduction",
}


def sizes(header: str) -> tuple[int, int] | None:
    """The window and reserved output a column is computed at, from its header."""
    found = [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]{2,}", header)]
    return (found[0], found[1]) if len(found) == 2 else None


def test_the_derived_limits_are_computed_at_the_stated_sizes() -> None:
    for heading, header, rows in tables(SETTINGS_PAGE):
        if heading != "Derived limits at two sizes":
            continue
        assert {r[0] for r in rows} == set(DERIVED)
        for row in rows:
            for column, cell in zip(header[2:], row[2:], strict=True):
                window, reserved = sizes(column)  # type: ignore[misc]
                limit = getattr(Limits(window, reserved, DEFAULTS), DERIVED[row[0]])
                assert number(cell) == limit, (row[0], column)
            # The formula names the settings rather than copying their values.
            assert not re.search(r"\d\.\d", row[1]), row[1]
        return
    raise AssertionError("docs/settings.md has no derived limits table")


@pytest.mark.parametrize("page", pages(), ids=page_id)
def test_every_settings_table_states_the_codes_defaults_and_sizes(page: Path) -> None:
    for _, header, rows in tables(page):
        if page == SETTINGS_PAGE or "default" not in header:
            continue
        default_at = header.index("default")
        for row in rows:
            # The row's settings: those its first cells name (before the default column).
            named = [n for c in row[:default_at] for n in NAME.findall(re.sub(r" \(.*", "", c))]
            fields = [n for n in named if n in FIELDS]
            if not fields:
                continue
            values = row[default_at].split(" / ")
            for field, value in zip(fields, values, strict=False):
                check_default(page, field, value)
            for column, cell in zip(header, row, strict=True):
                at = sizes(column)
                if at and cell and fields[0] in LIMIT_OF:
                    limit = getattr(Limits(*at, DEFAULTS), LIMIT_OF[fields[0]])
                    assert number(cell) == limit, (page_id(page), fields[0], column)
            if "presets" in header:
                check_presets(page, fields[0], row[header.index("presets")])


def check_default(page: Path, field: str, cell: str) -> None:
    default = getattr(DEFAULTS, field)
    first = cell.replace("`", "").split(" ")[0].strip('"')
    if isinstance(default, bool | str) or default is None or isinstance(default, dict):
        assert first == (str(default) if not isinstance(default, dict) else "{}"), (
            page_id(page),
            field,
            cell,
        )
    else:
        assert number(first) == default, (page_id(page), field, cell)


def check_presets(page: Path, field: str, cell: str) -> None:
    for name, value in re.findall(r"`(\w+)`:? ([\w.,]+)", cell):
        assert number(value) == getattr(PRESETS[name], field), (page_id(page), field, name)


def test_the_model_windows_table_is_the_codes() -> None:
    rows = table(SETTINGS_PAGE, "model name starts with", "Context windows per model")
    stated = {
        prefix: number(window)
        for names, window in rows
        for prefix in re.findall(r"`([^`]+)`", names)
    }
    assert stated == {prefix: float(window) for prefix, window in MODEL_WINDOWS}
    assert number(rows[-1][1]) == DEFAULT_WINDOW  # "anything else"
