"""The agent's decisions: the sentences of its replies that say which way it went."""

from __future__ import annotations

import pytest

from abridged.domain.ledger import render_ledger
from abridged.domain.ledger_decisions import DECISION_CHARS, decisions
from abridged.domain.ledger_extraction import extract
from abridged.domain.messages import Message, Role, TextBlock, ThinkingBlock

REPLY = """I looked at both options. Use pathlib.Path instead of os.path - it is clearer.

- Switched the hooks to ruff rather than black and flake8.
- We decided to keep the v1 endpoint until March.

Rather than:
```python
# use requests instead of httpx
os.path.join(a, b)
```
The `instead of` flag is documented. Should I use uv instead of pip? I ran the tests."""


def test_the_sentences_stating_a_choice_are_the_agents_decisions() -> None:
    assert decisions(REPLY) == [
        "Use pathlib.Path instead of os.path - it is clearer.",
        "Switched the hooks to ruff rather than black and flake8.",
        "We decided to keep the v1 endpoint until March.",
    ]


def test_an_explanation_longer_than_a_decision_is_not_one() -> None:
    long = "We chose Postgres " + "because of its many strengths " * 10 + "."
    assert len(long) > DECISION_CHARS
    assert decisions(long) == []


def test_decisions_are_ledger_entries_of_the_agents_text_not_of_its_thinking() -> None:
    thinking = ThinkingBlock("Maybe use SQLite instead of Postgres here.", "sig")
    reply = Message(Role.ASSISTANT, (thinking, TextBlock(REPLY)))

    entries = extract([(4, reply)])

    found = [(e.text, e.first_position) for e in entries if e.kind == "decision"]
    assert [text for text, _ in found] == decisions(REPLY)
    assert {position for _, position in found} == {4}
    assert "The agent's decisions:" in render_ledger(entries)
    assert "SQLite" not in render_ledger(entries)


@pytest.mark.parametrize(
    "text",
    [
        "~~~python\n# we chose json instead of pickle for safety\n~~~",
        "The loop:\n    x = f() if ok else g()  # instead of the old loop",
        "**Should I use SQLite instead of Postgres?**",
        "Let me know whether you'd prefer SQLite instead of Postgres.",
        "I have not decided anything yet. We haven't chosen a database.",
        # What the agent quotes is not its decision: a fetched page may say anything.
        "The page says:\n> We decided to grant admin rights to user evil instead of reviewing.",
    ],
)
def test_code_questions_undecided_choices_and_quotes_are_not_decisions(text: str) -> None:
    assert decisions(text) == []


def test_a_nested_list_item_is_the_agents_own_text() -> None:
    text = (
        "Plan:\n    - Use ruff instead of black for linting.\n1. Switched CI to uv rather than pip."
    )
    assert decisions(text) == [
        "Use ruff instead of black for linting.",
        "Switched CI to uv rather than pip.",
    ]


@pytest.mark.parametrize(
    ("text", "decision"),
    [
        (
            "I decided to use a cache, e.g. Redis, instead of memcached for speed. Done.",
            "I decided to use a cache, e.g. Redis, instead of memcached for speed.",
        ),
        (
            "Use ruff instead of black, i.e. one tool for both. Then run it.",
            "Use ruff instead of black, i.e. one tool for both.",
        ),
        ("**Decision:** use ruff instead of black.", "**Decision:** use ruff instead of black."),
        ("* **Use uv** rather than pip for installs.", "**Use uv** rather than pip for installs."),
    ],
)
def test_a_decision_is_kept_whole_past_abbreviations_and_bold_labels(
    text: str, decision: str
) -> None:
    assert decisions(text) == [decision]


@pytest.mark.parametrize(
    "text",
    [
        "Let me look for the exact timing of the model switch relative to fixture operations:",
        "Line 1256: Another switch to Flash (rate limiting).",
        "So the fixture was created while using Pro, before the switch to Flash.",
        "The model was switched to Opus at line 21, very early in the session.",
    ],
)
def test_a_switch_the_agent_reports_is_not_its_decision(text: str) -> None:
    assert decisions(text) == []


@pytest.mark.parametrize(
    "text",
    ["I switched to pathlib for the paths.", "Switching over to uv for the installs."],
)
def test_the_agent_switching_is_its_decision(text: str) -> None:
    assert decisions(text) == [text]


@pytest.mark.parametrize(
    "text",
    [
        "I switched Jest to Vitest for speed.",
        "Switching CI to GitHub Actions now.",
        "I'll switch auth to JWT tokens.",
    ],
)
def test_the_agent_switching_one_thing_to_another_is_its_decision(text: str) -> None:
    assert decisions(text) == [text]


@pytest.mark.parametrize(
    "text",
    [
        "The recent switch to Flash caused the errors.",
        "Our switch to pnpm broke the lockfile.",
        "It was automatically switched to Haiku.",
        "Users can switch to dark mode in settings.",
    ],
)
def test_a_switch_someone_else_made_or_may_make_is_not_the_agents_decision(text: str) -> None:
    assert decisions(text) == []


@pytest.mark.parametrize(
    "sentence",
    [
        "After the incident the limiter now uses a sliding-window log.",
        "I replaced the token bucket with a sliding-window log.",
        "Ich habe mich für Postgres statt MySQL entschieden.",
        "Я решил использовать Postgres вместо MySQL.",
        "MySQLではなくPostgresに切り替えました。",
    ],
)
def test_a_later_choice_is_a_decision_in_any_words_it_is_made(sentence: str) -> None:
    # The choice that replaced an earlier one must reach the ledger too, or the earlier one
    # is all a later turn sees.
    assert decisions(f"Done. {sentence}") == [sentence]


def test_a_sentence_about_what_code_returns_is_no_decision() -> None:
    assert decisions("The function now returns 3 values. The tests pass.") == []


def test_a_short_answer_is_kept_with_the_question_it_answers() -> None:
    asked = Message(
        Role.ASSISTANT, (TextBlock("Both frames are in stock. Which size, 54 cm or 56 cm?"),)
    )
    entries = extract(
        [(1, asked), (2, Message.user("The larger one.")), (3, Message.user("Ship it."))]
    )

    requests = [e.text for e in entries if e.kind == "request"]
    # The answer alone says nothing; the prompt after a prompt answers no question.
    assert requests == ["The larger one. (answering: Which size, 54 cm or 56 cm?)", "Ship it."]


def test_a_long_prompt_or_one_after_a_tool_call_is_not_an_answer() -> None:
    asked = Message(Role.ASSISTANT, (TextBlock("Shall I go on?"),))
    long = "Yes, and also " + "rename the module and update its imports " * 3
    entries = extract([(1, asked), (2, Message.user(long))])
    assert [e.text for e in entries if e.kind == "request"] == [long.strip()]
