"""The dependency rule, checked on the source: adapters → application → domain."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The domain may import the standard library's pure modules, attrs and eventsourcing.domain:
# no clock, disk, network, environment or randomness.
DOMAIN_MAY_IMPORT = {
    "__future__",
    "attrs",
    "base64",
    "bisect",
    "collections",
    "collections.abc",
    "enum",
    "hashlib",
    "itertools",
    "json",
    "math",
    "re",
    "typing",
    "uuid",
    "eventsourcing.domain",
    "dataclasses",
    "functools",
}


def imports(package: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = names
    return found


def test_the_domain_imports_only_pure_modules() -> None:
    for path, names in imports("domain").items():
        outside = {n for n in names if not n.startswith("abridged.domain")} - DOMAIN_MAY_IMPORT
        assert not outside, f"{path} imports {sorted(outside)}"


def test_the_application_does_not_import_adapters() -> None:
    for path, names in imports("application").items():
        assert not any(n.startswith("abridged.adapters") for n in names), path


def test_every_import_goes_through_the_abridged_package() -> None:
    # The folders are importable as top-level packages from a checkout, but not once
    # installed: an import of `domain.x` would work in the tests and fail for users.
    for package in ("domain", "application", "adapters", "tests"):
        for path, names in imports(package).items():
            bare = {n for n in names if n.split(".")[0] in {"domain", "application", "adapters"}}
            assert not bare, f"{path} imports {sorted(bare)} outside the abridged package"


MODULE_LINES = 450
SERVICE_LINES = 400
SESSION_LINES = 300


def test_modules_stay_small_enough_to_read() -> None:
    # A module (or the aggregate) past its size is split by concern, not left to grow: a
    # newcomer reads one concern in one place.
    too_long = {
        str(path.relative_to(ROOT)): lines
        for package in ("domain", "application", "adapters")
        for path in sorted((ROOT / package).rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    }
    assert not too_long, f"modules over {MODULE_LINES} lines: {too_long}"
    service = ROOT / "application" / "service.py"
    service_lines = len(service.read_text(encoding="utf-8").splitlines())
    assert service_lines <= SERVICE_LINES, f"application/service.py has {service_lines} lines"
    session = ast.parse((ROOT / "domain" / "session.py").read_text(encoding="utf-8"))
    aggregate = next(
        node for node in session.body if isinstance(node, ast.ClassDef) and node.name == "Session"
    )
    assert aggregate.end_lineno is not None
    session_lines = aggregate.end_lineno - aggregate.lineno + 1
    assert session_lines <= SESSION_LINES, f"the Session class has {session_lines} lines"
