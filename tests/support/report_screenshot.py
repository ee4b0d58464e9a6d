"""Makes `docs/report.png`: a shared transcript replayed, reported, opened in Chromium.

python -m tests.support.report_screenshot [TRANSCRIPT] [--out docs/report.png]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.report import report_html
from abridged.application.auditing import audit_session
from abridged.domain.settings import settings_from
from tests.conftest import TRANSCRIPTS
from tests.e2e.test_replay_transcripts import COUNTER
from tests.e2e.test_report_browser import open_report

DEFAULT = TRANSCRIPTS / "openhands-ponylang__ponyc-4588.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("transcript", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--out", type=Path, default=Path("docs/report.png"))
    parser.add_argument("--window", type=int, default=16_000)
    parser.add_argument("--preset", default="aggressive")
    args = parser.parse_args()
    from abridged.adapters.transcripts import load_transcript
    from abridged.domain.messages import Role

    transcript = load_transcript(args.transcript)
    app = bootstrap(counter=COUNTER)
    session_id = app.start_session(
        model=transcript.model or "claude-sonnet-4-5",
        context_window=args.window,
        max_output_tokens=min(8192, args.window // 4),
        system=transcript.system,
        tools=transcript.tools,
        settings=settings_from(args.preset),
    )
    for message in transcript.messages:
        if message.role is Role.ASSISTANT:
            app.prepare_request(session_id)
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
    title = f"{args.transcript.stem} at {args.window:,} tokens, preset {args.preset}"
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "report.html"
        page.write_text(report_html(audit_session(app, session_id), title=title), "utf-8")
        found = open_report(page, screenshot=args.out)
    print(f"wrote {args.out}: {found['points']} requests, errors {found['errors']}")


if __name__ == "__main__":
    main()
