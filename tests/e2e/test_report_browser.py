"""The HTML report, opened in a real headless Chromium (Debian's, driven by Playwright):
it renders with no network, the chart has one point per request, and nothing errors."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from click.testing import CliRunner

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.cli import main
from abridged.adapters.report import CHART_ID
from abridged.domain.messages import Role
from abridged.domain.session import Session
from abridged.domain.usage import Usage
from tests.e2e.test_replay_transcripts import COUNTER, transcripts
from tests.support.replays import replay

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="Chromium is missing: .ci/run installs it"
)


def open_report(path: Path, screenshot: Path | None = None) -> dict[str, Any]:
    """Loads the page with every non-file request refused; returns what the page shows."""
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    network: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))

            def refuse(route: Any) -> None:
                network.append(route.request.url)
                route.abort()

            page.route("http*://**", refuse)
            page.goto(path.as_uri())
            page.wait_for_selector(f"#{CHART_ID} .main-svg")
            chart = page.locator(f"#{CHART_ID} .scatterlayer .trace").first
            found = {
                "points": chart.locator(".points path").count(),
                "x": page.evaluate(f"document.getElementById('{CHART_ID}').data[0].x"),
                "legend": page.locator(f"#{CHART_ID} .legendtext").all_text_contents(),
                "bars": page.locator(f"#{CHART_ID} .barlayer .point").count(),
                "details": page.locator("details").count(),
                "errors": errors,
                "network": network,
            }
            summary = page.locator("details").first
            if found["details"]:
                summary.locator("summary").click()
                found["opened"] = summary.locator("pre").is_visible()
            if screenshot is not None:
                page.screenshot(path=str(screenshot))
        finally:
            browser.close()
    return found


@pytest.mark.transcripts
@pytest.mark.skipif(not transcripts(), reason="the shared transcripts folder is absent")
def test_a_replayed_session_s_report_renders_one_point_per_request(tmp_path: Path) -> None:
    db = tmp_path / "sessions.sqlite3"
    path = next(p for p in transcripts() if "ponyc-4588" in p.stem)
    session_id = replay(bootstrap(db, counter=COUNTER), path, 16_000)
    out = tmp_path / "report.html"

    result = CliRunner().invoke(
        main, ["report", str(session_id), "--db", str(db), "--out", str(out)]
    )

    assert result.exit_code == 0, result.output
    page = open_report(out)
    app = bootstrap(db, counter=COUNTER)
    replies = [
        e
        for e in app.history(session_id)
        if isinstance(e, Session.MessageAppended) and e.message.role is Role.ASSISTANT
    ]
    assert page["points"] == len(page["x"]) == len(replies) > 0
    assert page["errors"] == []
    assert page["network"] == []
    assert {"context tokens", "window", "threshold", "compacted"} <= set(page["legend"])
    assert page["details"] == app.session(session_id).generation > 0
    assert page["opened"] is True


def test_cache_reads_and_writes_are_drawn_where_usage_is_known(tmp_path: Path) -> None:
    from tests.support.builders import TOOLS, turn, words

    db = tmp_path / "sessions.sqlite3"
    app = bootstrap(db, counter=COUNTER)
    session_id: UUID = app.start_session(
        model="claude-test", context_window=8_000, max_output_tokens=1_000, tools=TOOLS
    )
    requests = 0
    for i in range(4):
        for message in turn(f"Request {i}", [words(40)]):
            if message.role is Role.ASSISTANT:
                requests += 1
                prepared = app.prepare_request(session_id)
                usage = Usage(5, 20, prepared.context.estimate - 5, 0 if i else 5)
                app.record_reply(session_id, message, usage)
            else:
                app.append_message(session_id, message)
    out = tmp_path / "report.html"
    result = CliRunner().invoke(
        main, ["report", str(session_id), "--db", str(db), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output

    page = open_report(out)

    assert page["points"] == requests
    assert {"cache reads", "cache writes"} <= set(page["legend"])
    assert page["bars"] == 2 * requests
    assert page["errors"] == []
