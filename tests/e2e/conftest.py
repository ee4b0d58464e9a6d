"""The built wheel and a virtual environment it is installed in, made once per test run:
the packaging and documentation tests run against abridged as a user installs it."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.support.shared_setup import made_once

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("domain", "application", "adapters")
UV = importlib.util.find_spec("uv") is not None
"""Whether the test run's environment has uv (`make` installs it; pip does the work without)."""


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built once per test run (the workers share it)."""
    (built,) = made_once(tmp_path_factory, "wheel", build_wheel).glob("dist/abridged-*.whl")
    return built


def build_wheel(folder: Path) -> None:
    # Built from a copy of the source: setuptools builds in the source tree's build/, which
    # an editable install may be using at the time.
    source = folder / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for name in ("abridged", *LAYERS):
        shutil.copytree(
            ROOT / name,
            source / name,
            symlinks=True,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
    out = folder / "dist"
    # uv, where `make` installed it, builds in an isolated environment from its cache; pip
    # makes one by downloading setuptools each run (6 s against under 2).
    build = (
        ["-m", "uv", "build", "--quiet", "--wheel", "-o", str(out), str(source)]
        if UV
        else ["-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(source)]
    )
    done = subprocess.run(
        [sys.executable, *build],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="session")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with the wheel installed, made once per test run; returns its
    `bin` folder. Tests only run it, never install into it."""
    return made_once(tmp_path_factory, "venv", lambda venv: install(wheel, venv)) / "bin"


def install(wheel: Path, venv: Path) -> None:
    """Offline and fast: the dependencies are the test run's own, without its editable
    abridged (a plain path entry does not run the .pth files, the editable finder, found
    there)."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    if UV:  # compiled as pip does: each command of the tests would otherwise compile it
        command = ["uv", "pip", "install", "--python", str(python), "--compile-bytecode"]
    else:
        command = ["pip", "--python", str(python), "install"]
    subprocess.run(
        [sys.executable, "-m", *command, "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    target = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # Every site folder of this run: a virtual environment may reach its dependencies through
    # a path entry of its own (a .pth line naming another environment's site-packages).
    folders = [sysconfig.get_paths()["purelib"]]
    folders += [p for p in sys.path if p.endswith("site-packages") and p not in folders]
    Path(target, "dependencies.pth").write_text("".join(f"{f}\n" for f in folders))
