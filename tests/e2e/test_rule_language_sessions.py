"""`abridged simulate` on sessions whose users state their rules in German, French, Spanish,
Portuguese, Japanese and Chinese (`tests.support.rule_language_sessions`): at 32k the early
prompts leave the facts ledger, and every rule they stated stays (docs/evaluation.md,
"Rules in the user's own language")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from abridged.adapters.cli import main
from tests.support.rule_language_sessions import LANGUAGES
from tests.support.rule_language_sessions import main as write_sessions

pytestmark = pytest.mark.xdist_group("simulate")


@pytest.fixture(scope="module")
def at_32k(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, Any]]:
    folder = tmp_path_factory.mktemp("rule-languages")
    assert write_sessions([str(folder)]) == 0
    paths = sorted(map(str, folder.glob("*.jsonl")))
    options = ["--window", "32000", "--references", "langchain", "--json"]
    result = CliRunner().invoke(main, ["simulate", *paths, *options])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    return {
        (Path(o["transcript"]).stem, o["strategy"]): o
        for o in document["outcomes"]
        if o["strategy"] in {"abridged", "langchain"}
    }


def test_every_rule_stated_in_the_users_language_outlasts_its_prompt(
    at_32k: dict[tuple[str, str], dict[str, Any]],
) -> None:
    for name in LANGUAGES:
        ours = at_32k[name, "abridged"]
        # Four rules and a decision each, as the measure reads them; the prompts that stated
        # them are gone from the ledger by the end.
        assert ours["facts_by_kind_count"]["constraints"] >= 4, name
        assert ours["facts_final_by_kind"]["requests"] < 1.0, name
        assert ours["facts_final_by_kind"]["constraints"] == 1.0, name
        assert (
            ours["facts_final_by_kind"]["constraints"]
            >= (at_32k[name, "langchain"]["facts_final_by_kind"]["constraints"])
        )


def test_every_request_is_sent_with_the_recent_tail_the_rule_keeps(
    at_32k: dict[tuple[str, str], dict[str, Any]],
) -> None:
    for name in LANGUAGES:
        ours = at_32k[name, "abridged"]
        assert ours["compactions"] > 0, name
        assert ours["not_sent"] == 0, name
        assert ours["short_tails"] == 0, name
