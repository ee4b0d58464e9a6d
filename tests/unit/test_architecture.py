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
