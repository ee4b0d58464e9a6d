"""Names of code the agent wrote in prose without backticks (`parse_config`, `useEffect`,
`session.commit()`): the ledger keeps them as `mention` entries, only in the room the other
facts leave, and `simulate` measures them as a kind of their own (docs/ledger.md)."""

from __future__ import annotations

from abridged.adapters.cli.simulate import KIND_LABELS
from abridged.adapters.simulation.facts import extract_facts
from abridged.domain import messages as wire
from abridged.domain.ledger import (
    RECENT_PER_KIND,
    LedgerEntry,
    advance,
    bounded,
    carried,
    extract,
    render_ledger,
)
from abridged.domain.messages import Message, TextBlock, ThinkingBlock
from tests.support.fakes import FakeTokenCounter

COUNTER = FakeTokenCounter()

PROSE = (
    "The bug is in parse_config: it calls session.commit() before useEffect runs, and "
    "ConfigParser reads src/parse_config.py from https://example.com/load_settings_now. "
    "MAX_UPLOAD_MB stays; `load_env` is fine, and so are a_b and e.g. plain words."
)


def mentions(entries: tuple[LedgerEntry, ...]) -> list[str]:
    return [e.text for e in entries if e.kind == "mention"]


def test_names_of_code_in_the_agents_prose_are_mentions() -> None:
    found = extract([(0, Message.user("Fix it")), (1, Message.assistant(PROSE))])

    assert mentions(found) == ["parse_config", "session.commit", "useEffect", "ConfigParser"]
    # A backticked name is an identifier; a constant is a value; a file name, a link's
    # words and a name of three characters are none of them.
    assert ("identifier", "load_env") in {(e.kind, e.text) for e in found}
    assert ("value", "MAX_UPLOAD_MB") in {(e.kind, e.text) for e in found}


def test_a_name_glued_to_a_script_without_spaces_is_a_mention_and_part_of_a_latin_word_not() -> (
    None
):
    prose = "parse_config関数を直し、Исправил useEffect; naïveBayes and café_au_lait stay."

    assert mentions(extract([(0, Message.assistant(prose))])) == ["parse_config", "useEffect"]
    assert [f.text for f in extract_facts([Message.assistant(prose)]) if f.kind == "mentions"] == [
        "parse_config",
        "useEffect",
    ]


def test_names_in_thinking_are_mentions_and_the_users_words_are_not() -> None:
    found = extract(
        [
            (0, Message.user("Please rename fetchUser everywhere")),
            (
                1,
                Message.assistant(ThinkingBlock("so getUserById calls it", "sig"), TextBlock("ok")),
            ),
        ]
    )

    assert mentions(found) == ["getUserById"]


def test_simulate_measures_mentions_as_a_kind_of_their_own() -> None:
    facts = extract_facts(
        [
            Message.user("Fix it"),
            Message.assistant(ThinkingBlock("check row_factory first", "sig"), TextBlock(PROSE)),
        ]
    )

    assert [f.text for f in facts if f.kind == "mentions"] == [
        "row_factory",
        "parse_config",
        "session.commit",
        "useEffect",
        "ConfigParser",
    ]
    assert KIND_LABELS["mentions"] == "ment"


def test_a_name_another_entry_quotes_is_not_listed_again() -> None:
    held = (LedgerEntry("command", "pytest -k test_parse_config", 0, 0),)
    found = extract(
        [
            (1, Message.assistant(wire.ToolUseBlock("r1", "Read", {"file_path": "src/app.py"}))),
            (2, Message.user(wire.ToolResultBlock("r1", "ok"))),
            (
                3,
                Message.assistant("test_parse_config fails; self.app.run() in app.py and load_all"),
            ),
        ]
    )

    update = advance(held, 20, 1, found, 10_000, COUNTER.count)

    # `test_parse_config` is a word of the command the ledger holds; `app.py` is a file
    # name; the call's name and `load_all` are new.
    assert mentions(update.entries) == ["self.app.run", "load_all"]
    assert "m4 load_all" in update.text


def test_the_tail_carries_the_names_its_prose_writes() -> None:
    tail = [(0, Message.user("go")), (1, Message.assistant("now parse_config works"))]

    assert carried(tail)[("mention", "parse_config")] == "mention"


def test_a_short_ledger_drops_mentions_before_any_other_fact() -> None:
    """Short names outweigh a long error line by the room they take; they go first anyway,
    but for the latest few."""
    error = LedgerEntry(
        "error", "psycopg.errors.UndefinedTable: relation users_archive does not exist", 0, 0
    )
    names = tuple(LedgerEntry("mention", f"helper_{k}", k, k) for k in range(1, 40))
    room = COUNTER.count(render_ledger((error, *names[-RECENT_PER_KIND:])))

    kept, dropped = bounded((error, *names), room, COUNTER.count)

    assert error in kept
    assert set(names[-RECENT_PER_KIND:]) <= set(kept)
    assert set(dropped) == set(names[:-RECENT_PER_KIND])
