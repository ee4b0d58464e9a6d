"""`abridged simulate` on sessions of shapes the defaults were never tuned or checked on
(`tests.support.outside_sessions`), in the three formats it reads: the promises of issue 21
hold on every one at 16k (docs/evaluation.md, "An outside check")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from abridged.adapters.cli import main
from tests.support.generated_sessions import write_records
from tests.support.outside_sessions import (
    api_blocks_claude_code_log,
    data_agent_records,
    pasted_document_records,
    support_email_records,
    thinking_parallel_records,
    unicode_records,
)

pytestmark = pytest.mark.xdist_group("simulate")


@pytest.fixture(scope="module")
def at_16k(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("outside")
    paths = [
        write_records(support_email_records(seed=401, tickets=10), folder / "emails.jsonl"),
        write_records(data_agent_records(seed=402, questions=6), folder / "data.jsonl"),
        write_records(thinking_parallel_records(seed=403, tasks=5), folder / "thinking.jsonl"),
        write_records(pasted_document_records(seed=404, questions=6), folder / "pasted.jsonl"),
        write_records(unicode_records(seed=405, turns=10), folder / "unicode.jsonl"),
        api_blocks_claude_code_log(406, turns=14).write(folder / "blocks.jsonl"),
        api_blocks_claude_code_log(407, turns=70, reminders=1).write(folder / "rules.jsonl"),
    ]
    options = ["--window", "16000", "--references", "langchain", "--json"]
    result = CliRunner().invoke(main, ["simulate", *map(str, paths), *options])
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_every_request_is_sent_with_the_recent_tail_the_rule_keeps(
    at_16k: dict[str, Any],
) -> None:
    ours = [o for o in at_16k["outcomes"] if o["strategy"] == "abridged"]
    assert len(ours) == 7
    for outcome in ours:
        name = Path(outcome["transcript"]).stem
        assert outcome["not_sent"] == 0, name
        assert outcome["short_tails"] == 0, name
    compacted = {Path(o["transcript"]).stem for o in ours if o["compactions"]}
    assert compacted >= {"emails", "data", "thinking", "pasted", "unicode", "rules"}


KNOWN_BELOW: set[tuple[str, str]] = set()
"""Where abridged keeps fewer facts of a kind than the reference, and why. Until the
measure counted numbers after words of other scripts too (issue 21's values), the emails'
numbers were below: at 16k the ledger's share (3,600 tokens) holds the prompts of six of
the ten emails (about 375 tokens each) and the numbers of the four it drops go with them,
while the reference sends its last 20 messages verbatim (docs/evaluation.md, "An outside
check"). They still go; counted with the others, abridged keeps 0.78 of the numbers and the
reference 0.76."""


def test_every_kind_of_fact_is_kept_at_least_as_the_reference_keeps_it(
    at_16k: dict[str, Any],
) -> None:
    by = {(Path(o["transcript"]).stem, o["strategy"]): o for o in at_16k["outcomes"]}
    below = set()
    for name in ("emails", "data", "thinking", "pasted", "unicode", "blocks", "rules"):
        ours = by[name, "abridged"]["facts_final_by_kind"]
        for kind, share in by[name, "langchain"]["facts_final_by_kind"].items():
            if ours[kind] < share:
                below.add((name, kind))
    assert below == KNOWN_BELOW
