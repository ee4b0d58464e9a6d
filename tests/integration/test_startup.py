"""A command or a host that never calls the API starts without importing the anthropic SDK:
its import is most of a command's start-up time (about 1.5 s of 2 s before), paid again by
every `abridged` a shell script runs. Nor does a command that keeps no read model import
SQLAlchemy (about 0.2 s)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.docs import transcript_lines

SCRIPT = """
import json, sys
from abridged import bootstrap
from abridged.adapters.cli import main

bootstrap()
ran = []
for args in json.loads(sys.argv[1]):
    try:
        main(args, standalone_mode=False)
    except SystemExit as exit:
        assert not exit.code, (args, exit.code)
    ran.append((args[0], "anthropic" in sys.modules, "sqlalchemy" in sys.modules))
print(json.dumps(ran))
"""


def test_commands_that_call_no_api_leave_the_sdk_and_sqlalchemy_unimported(tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("\n".join(transcript_lines()) + "\n")
    db = tmp_path / "sessions.db"
    commands = [
        ["--help"],
        ["demo", "--db", ":memory:"],
        ["replay", str(transcript), "--db", str(db), "--window", "4000"],
        ["simulate", str(transcript), "--window", "4000", "--references", "none,langchain"],
        ["sessions", "--db", str(db)],
        ["audit", "--db", str(db), "--all"],
    ]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(commands)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ran = json.loads(done.stdout.strip().splitlines()[-1])
    assert ran == [[args[0], False, False] for args in commands]
