"""The built wheel, installed as a user installs it: one `abridged` package, nothing else.

A host app with its own `domain` or `application` package must be able to install abridged
beside it, and `import abridged` must give the documented API.
"""

from __future__ import annotations

import os
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import abridged

ROOT = Path(__file__).resolve().parents[2]

LAYERS = ("domain", "application", "adapters")


def sources() -> Iterator[str]:
    for layer in LAYERS:
        for path in (ROOT / layer).rglob("*.py"):
            yield f"abridged/{path.relative_to(ROOT).as_posix()}"


def test_the_wheel_holds_one_package_and_every_module(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"abridged"}
    assert "abridged/py.typed" in names
    missing = set(sources()) - set(names)
    assert not missing, f"modules left out of the wheel: {sorted(missing)}"


def test_installed_beside_a_host_package_named_application(installed: Path, tmp_path: Path) -> None:
    python = installed / "python"
    host = tmp_path / "host"
    (host / "application").mkdir(parents=True)
    (host / "application" / "__init__.py").write_text('NAME = "the host app"\n')
    (host / "domain").mkdir()
    (host / "domain" / "__init__.py").write_text('NAME = "the host domain"\n')
    script = (
        "import application, domain, abridged\n"
        "assert application.NAME == 'the host app', application.__file__\n"
        "assert domain.NAME == 'the host domain', domain.__file__\n"
        "assert 'site-packages' in abridged.__file__, abridged.__file__\n"
        "missing = [n for n in abridged.__all__ if not hasattr(abridged, n)]\n"
        "assert not missing, missing\n"
        "sessions = abridged.bootstrap(':memory:')\n"
        "sid = sessions.start_session(model='claude-sonnet-4-5', max_output_tokens=1024)\n"
        "sessions.append_message(sid, {'role': 'user', 'content': 'Hello'})\n"
        "prepared = sessions.prepare_request(sid)\n"
        "body = abridged.render_request(prepared.context, model=prepared.model,"
        " max_tokens=prepared.max_tokens)\n"
        "print(body['messages'][0]['content'][0]['text'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [str(python), "-c", script],
        cwd=host,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Hello"


def test_the_public_api_is_importable_from_abridged() -> None:
    for name in abridged.__all__:
        assert getattr(abridged, name) is not None, name
