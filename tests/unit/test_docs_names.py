"""The names the docs give in backticks resolve to real names, as an installed package spells
them: dotted `abridged.…` paths import, `Sessions.method` and `sessions.method(…)` exist
(or on `AsyncSessions`), and a setting named in a `--set` or a `*_share`/`*_ratio` name is a
field of `CompactionSettings`."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import attrs
import pytest

from abridged import AsyncSessions, CompactionSettings, Sessions
from abridged.application.ports import MetricNames
from abridged.domain import events, session
from abridged.domain.settings import Limits
from tests.support.docs import page_id, pages

CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
LAYERS = ("domain.", "application.", "adapters.")
FILE_SUFFIXES = (".sqlite3", ".json", ".jsonl", ".md", ".py", ".html", ".png")
FIELDS = {f.name for f in attrs.fields(CompactionSettings)}
LIMITS = {n for n in dir(Limits) if not n.startswith("_")}
METRICS = {v for k, v in vars(MetricNames).items() if not k.startswith("_")}


def prose(page: Path) -> str:
    """The page without its fenced blocks (those run as programs)."""
    return re.sub(r"^( *)```.*?^\1```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)


def dotted(span: str) -> str:
    """The dotted name a code span starts with (`a.b.c(x)` gives `a.b.c`)."""
    match = re.match(r"[A-Za-z_][\w.]*", span)
    return match.group().rstrip(".") if match else ""


def resolves(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                # An instance attribute of an attrs class is a field, not a class attribute.
                fields = attrs.fields_dict(target) if attrs.has(target) else {}  # type: ignore[arg-type]
                if attribute not in fields:
                    return False
                target = fields[attribute]
            else:
                target = getattr(target, attribute)
        return True
    return False


def problems(page: Path) -> list[str]:
    found = []
    text = prose(page)
    for span in CODE_SPAN.findall(text):
        name = dotted(span)
        if name.startswith(LAYERS):
            found.append(f"`{span}`: write abridged.{name}, as the installed package has it")
        elif name.startswith("abridged."):
            if name in METRICS or name.endswith(FILE_SUFFIXES) or span.startswith("abridged "):
                continue
            if not resolves(name):
                found.append(f"`{span}`: {name} is not a name of abridged")
        elif re.match(r"(Async)?Sessions\.\w+$", name) or re.match(r"sessions\.\w+\(", span):
            method = name.split(".")[1]
            if not (hasattr(Sessions, method) or hasattr(AsyncSessions, method)):
                found.append(f"`{span}`: Sessions has no {method}")
        for setting in re.findall(r"--set '?([a-z_]+)=", span):
            if setting not in FIELDS:
                found.append(f"`{span}`: {setting} is not a setting")
        share = re.fullmatch(r"([a-z_]+_(?:share|ratio))(?:=.*)?", span)
        if share and share.group(1) not in FIELDS | LIMITS:
            found.append(f"`{span}`: {share.group(1)} is not a setting")
    return found


@pytest.mark.parametrize("page", pages(), ids=page_id)
def test_the_names_a_page_gives_are_real(page: Path) -> None:
    found = problems(page)
    assert not found, "\n".join(found)


def test_a_misspelt_name_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "`abridged.domain.settings.CompactionSetting`, `domain.errors.SessionError`, "
        "`Sessions.start`, `--set keep_recent=2`, `treshold_ratio`\n",
        encoding="utf-8",
    )
    assert len(problems(page)) == 5


VERSIONED = re.compile(r"`(\w+)\.class_version`\s+is\s+(\d+)")
NUMBERED_VERSION = re.compile(r"class_version`?\s*(?:=\s*|is\s+|)(\d+)")


def version_problems(text: str) -> list[str]:
    """A stored class's version as a page states it (`Name.class_version` is N) against the
    code's; a version written any other way cannot be checked, so it is a problem too."""
    found = []
    for name, stated in VERSIONED.findall(text):
        owner = getattr(events, name, None) or getattr(session, name, None)
        actual = getattr(owner, "class_version", None)
        if actual != int(stated):
            found.append(f"`{name}.class_version` is {actual}, not {stated}")
    stated_elsewhere = len(NUMBERED_VERSION.findall(VERSIONED.sub("", text)))
    if stated_elsewhere:
        found.append(f"{stated_elsewhere} version(s) not written as `Name.class_version` is N")
    return found


@pytest.mark.parametrize("page", pages(), ids=page_id)
def test_the_stored_class_versions_a_page_states_are_the_codes(page: Path) -> None:
    found = version_problems(prose(page))
    assert not found, "\n".join(found)


def test_a_stale_class_version_is_caught() -> None:
    stale = "`Session.class_version` is 5; `Started` is at `class_version = 3`"
    assert len(version_problems(stale)) == 2
