"""Every bad input of the catalogue gets its typed error and writes nothing, in a SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.application.service import Sessions
from abridged.domain.errors import SessionError
from tests.reliability.catalogue import API_CASES, Bases, Case, make_bases


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sessions, Bases, Path]]:
    path = tmp_path_factory.mktemp("catalogue") / "sessions.sqlite3"
    app = bootstrap(path)
    yield app, make_bases(app), path
    app.close()


def rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as connection:
        return connection.execute(
            "SELECT originator_id, originator_version, topic FROM stored_events ORDER BY rowid"
        ).fetchall()


def test_the_catalogue_holds_at_least_sixty_cases() -> None:
    assert len(API_CASES) >= 60
    assert len({case.name for case in API_CASES}) == len(API_CASES)


@pytest.mark.parametrize("case", API_CASES, ids=[case.name for case in API_CASES])
def test_a_bad_input_gets_its_typed_error_and_writes_nothing(
    store: tuple[Sessions, Bases, Path], case: Case
) -> None:
    app, bases, path = store
    before = rows(path)

    with pytest.raises(case.error) as raised:
        case.act(app, bases)

    assert isinstance(raised.value, SessionError)
    assert str(raised.value).strip()
    assert rows(path) == before


def test_the_docs_list_every_case() -> None:
    from tests.reliability.test_cli_catalogue import CLI_CASES

    docs = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text()
    names = [case.name for case in API_CASES] + [case.name for case in CLI_CASES]
    for name in names:
        assert f"| {name} |" in docs, name
