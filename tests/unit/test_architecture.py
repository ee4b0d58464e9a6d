"""The dependency rule, checked on the source: adapters → application → domain."""

from __future__ import annotations

import ast
import re
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
    "unicodedata",
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


def application_graph() -> dict[str, set[str]]:
    """Which modules of `application/` each module imports (at any depth of the module:
    inside functions and `TYPE_CHECKING` blocks too, since a cycle there is still a loop in
    what a reader must hold in mind)."""
    prefix = "abridged.application"
    modules = {path.stem for path in (ROOT / "application").glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in sorted((ROOT / "application").glob("*.py")):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if name.startswith(prefix + ".") and len(parts) >= 3 and parts[2] in modules:
                    found.add(parts[2])
        graph[path.stem] = found - {path.stem}
    return graph


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph`, as the modules along it, or `None`."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        for imported in sorted(graph.get(module, ())):
            found = visit(imported, [*path, module])
            if found:
                return found
        done.add(module)
        return None

    for module in sorted(graph):
        found = visit(module, [])
        if found:
            return found
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle_in({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle_inside_the_application() -> None:
    graph = application_graph()
    assert graph.get("service"), "the graph was not read"
    cycle = cycle_in(graph)
    assert cycle is None, " -> ".join(cycle or ())


def private_uses(source: str) -> list[str]:
    """The `_private` names a module takes from elsewhere: imported by name, or read as an
    attribute of anything but `self`, `cls` or `super()` (an object another module made)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            found += [
                f"import {node.module}.{alias.name}"
                for alias in node.names
                if alias.name.startswith("_") and not alias.name.startswith("__")
            ]
        elif isinstance(node, ast.Attribute):
            name = node.attr
            if not name.startswith("_") or name.startswith("__"):
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in {"self", "cls"}:
                continue
            if isinstance(owner, ast.Call) and getattr(owner.func, "id", None) == "super":
                continue
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_private_name_finder_finds_one() -> None:
    assert private_uses("app._load(1)\nself._x()\nsuper()._record(e)\n") == ["line 1: app._load"]
    assert private_uses("from a.b import _hidden\n") == ["import a.b._hidden"]


def test_no_application_module_uses_another_modules_private_names() -> None:
    for path in sorted((ROOT / "application").glob("*.py")):
        uses = private_uses(path.read_text(encoding="utf-8"))
        assert not uses, f"{path.name}: {uses}"


def architecture_map() -> dict[str, list[list[str]]]:
    """The map in docs/architecture.md: for each layer, its lines' module names, top first."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("```text", 1)[1].split("```", 1)[0].splitlines()[1:]
    layers: dict[str, list[list[str]]] = {}
    layer = ""
    for line in block:
        if not line.startswith(" "):
            layer = line.split()[0].rstrip("/")
            layers[layer] = []
            continue
        # Module names, then (after two spaces or more) what they are for.
        names = re.split(r"\s{2,}", line.strip())[0].split()
        assert all(re.fullmatch(r"[a-z_]+/?", name) for name in names), line
        layers[layer].append(names)
    return layers


def test_the_architecture_map_names_every_module_once_in_import_order() -> None:
    layers = architecture_map()
    assert list(layers) == ["adapters", "application", "domain"]
    for layer, lines in layers.items():
        named = [name for line in lines for name in line]
        assert len(named) == len(set(named)), f"{layer}: named twice in the map"
        actual = {
            path.stem if path.is_file() else f"{path.name}/"
            for path in (ROOT / layer).iterdir()
            if (path.suffix == ".py" and path.stem != "__init__")
            or (path.is_dir() and (path / "__init__.py").exists())
        }
        assert set(named) == actual, f"{layer}: the map and the code differ"
    # In application/ and domain/, a line imports only from the lines below it (or its own).
    for layer in ("application", "domain"):
        line_of = {name: k for k, line in enumerate(layers[layer]) for name in line}
        upward = []
        for module, k in line_of.items():
            tree = ast.parse((ROOT / layer / f"{module}.py").read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module:
                    parts = node.module.split(".")
                    if parts[:2] == ["abridged", layer] and len(parts) > 2:
                        target = parts[2]
                        if target in line_of and line_of[target] < k:
                            upward.append(f"{module} imports {target}")
        assert not upward, f"{layer}: the map's order is not the code's: {upward}"
