"""`simulate`'s `values` kind (issue 21): exact values in prompts and the agent's text, found
whatever the script around them, and reported by kind for every strategy."""

from __future__ import annotations

from abridged.adapters.cli.simulate import KIND_LABELS
from abridged.adapters.simulation.facts import extract_facts
from abridged.domain.messages import Message, Role, TextBlock


def kinds(*texts: tuple[Role, str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for fact in extract_facts([Message(role, (TextBlock(text),)) for role, text in texts]):
        found.setdefault(fact.kind, []).append(fact.text)
    return found


def test_values_in_any_script_are_facts_and_prose_numbers_are_not() -> None:
    found = kinds(
        (Role.USER, "Номер заявки INC-108602, списали 2469 рублей; 2 files in 2024."),
        (
            Role.ASSISTANT,
            "注文ORD-12345は2024-05-21 10:30に発送、金額3480円。Commit a1b2c3d, v1.2.3.",
        ),
        (Role.ASSISTANT, "Set FOO_BAR=1 and mail ops@example.com; db at 10.0.0.5:5432, $1,299.00."),
    )
    assert found["values"] == [
        "INC-108602",
        "ORD-12345",
        "2024-05-21 10:30",
        "a1b2c3d",
        "v1.2.3",
        "FOO_BAR=1",
        "ops@example.com",
        "10.0.0.5:5432",
        "$1,299.00",
    ]
    assert "списали 2469" in found["numbers"]
    assert "金額3480" in found["numbers"]
    assert not any("2024" in n and "-" not in n for n in found["numbers"])


def test_amounts_with_the_sign_after_and_ids_of_several_parts_are_values() -> None:
    found = kinds(
        (Role.USER, "Facture F-2026-118 : 21 907,44 € TTC, soit 12,50 € par lot; CHF 1'250.00."),
        (Role.ASSISTANT, "URSSAF échéance réf. URS-2026-0115 : 3 118,00 €. The F-16 in 2024."),
    )
    assert found["values"] == [
        "F-2026-118",
        "21 907,44 €",
        "12,50 €",
        "CHF 1'250.00",
        "URS-2026-0115",
        "3 118,00 €",
    ]


def test_a_uuid_is_a_value_and_its_groups_are_not_hashes_of_their_own() -> None:
    found = kinds(
        (Role.ASSISTANT, "Request 3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b timed out; see a1b2c3d."),
    )
    assert found["values"] == ["3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b", "a1b2c3d"]


def test_a_pasted_logs_line_timestamps_are_not_values() -> None:
    log = "\n".join(f"2026-11-27 10:{k:02d}:00 INFO worker {k}" for k in range(5))
    assert kinds((Role.USER, log + "\nRetry at 11:45."))["values"] == ["11:45"]


def test_the_report_has_a_column_for_values() -> None:
    assert KIND_LABELS["values"] == "val"


def test_an_amounts_magnitude_is_part_of_the_fact() -> None:
    # `€412` is not what `€412k` says: a summary that kept only the digits did not keep it.
    found = kinds(
        (Role.USER, "SMB-EMEA lost €412k of MRR; the budget is $1.2M and the deal 2.5M EUR."),
    )
    assert found["values"] == ["€412k", "$1.2M", "2.5M EUR"]


def test_endpoints_phones_shortcuts_constraints_and_pull_requests_are_values() -> None:
    found = kinds(
        (
            Role.ASSISTANT,
            "Ring +33 6 12 34 56 78 about GET /healthz/limiter; pin elasticsearch-py>=8.12,<9,"
            " press Ctrl+Alt+T and merge PR 4821. The check x == 5 and +12 34 are not values.",
        ),
    )
    assert found["values"] == [
        "+33 6 12 34 56 78",
        "GET /healthz/limiter",
        "elasticsearch-py>=8.12,<9",
        "Ctrl+Alt+T",
        "PR 4821",
    ]
