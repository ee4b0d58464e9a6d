"""`abridged simulate` on sessions in scripts that cost about a token a character or more
(`tests/fixtures/scripts`, made by `tests.support.script_sessions`, and the CJK support chat
of the third outside check): Japanese, Korean, Russian, Hindi, Arabic with emoji. At 16k and
32k every request is sent with the recent tail the rule keeps and every rule the user stated
is still sent; at 16k, where the reference keeps least, abridged keeps at least its share of
the facts (docs/evaluation.md, "Caps that cost the same in every script").

Not asserted, because it does not hold: at 32k the LangChain-style reference keeps more of the
facts of `ko-travel-602` and `ar-social-605` (its last 20 messages hold their latest links
and arguments; abridged's ledger is full of prompts that cost a token a character), and at
16k and 32k abridged's bill is above the reference's on these sessions."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from abridged.adapters.cli import main
from tests.support import script_sessions

# Its own group: the two windows are simulated once per worker (`simulated`), beside the
# other simulate modules rather than after them.
pytestmark = pytest.mark.xdist_group("simulate-scripts")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SESSIONS = (
    "ja-coding-601",
    "ko-travel-602",
    "ru-telecom-603",
    "hi-data-604",
    "ar-social-605",
    "cjk-support-501",
)


@functools.cache
def simulated(window: int) -> dict[tuple[str, str], dict[str, Any]]:
    """Each session's outcome by strategy, simulated once per window for the module."""
    paths = [
        *sorted((FIXTURES / "scripts").glob("*.jsonl")),
        FIXTURES / "outside3" / "cjk-support-501.jsonl",
    ]
    assert {p.name.split(".")[0] for p in paths} == set(SESSIONS)
    options = ["--window", str(window), "--references", "langchain", "--json"]
    result = CliRunner().invoke(main, ["simulate", *map(str, paths), *options])
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return {
        (Path(o["transcript"]).name.split(".")[0], o["strategy"]): o for o in document["outcomes"]
    }


WINDOWS = pytest.mark.parametrize("window", [16_000, 32_000], ids=["16k", "32k"])


@WINDOWS
def test_every_request_is_sent_with_the_recent_tail_the_rule_keeps(window: int) -> None:
    by = simulated(window)
    for name in SESSIONS:
        ours = by[name, "abridged"]
        assert ours["compactions"] > 0, name
        assert ours["not_sent"] == 0, name
        assert ours["short_tails"] == 0, name


@WINDOWS
def test_every_rule_the_user_stated_is_still_sent(window: int) -> None:
    by = simulated(window)
    for name in SESSIONS:
        assert by[name, "abridged"]["facts_final_by_kind"]["constraints"] == 1.0, name


def test_where_the_window_is_short_abridged_keeps_at_least_the_references_facts() -> None:
    by = simulated(16_000)
    for name in SESSIONS:
        assert by[name, "abridged"]["facts_final"] >= by[name, "langchain"]["facts_final"], name


def test_the_sessions_are_the_ones_their_generator_writes(tmp_path: Path) -> None:
    assert script_sessions.main([str(tmp_path)]) == 0
    for written in sorted(tmp_path.glob("*.jsonl")):
        assert written.read_bytes() == (FIXTURES / "scripts" / written.name).read_bytes()
    assert {p.name for p in tmp_path.glob("*.jsonl")} == {
        p.name for p in (FIXTURES / "scripts").glob("*.jsonl")
    }
