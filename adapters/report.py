"""A session's report: one self-contained HTML page an operator can open anywhere.

A chart of the context tokens of every request (window and threshold lines, prunes and
compactions marked, cache reads and writes where the provider reported them) and the audit
under it, each compaction's summary expandable. plotly draws the chart; its JavaScript is
inlined, so the page needs no network to open.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Sequence
from typing import Any

import attrs
import plotly.graph_objects as go

from abridged.application.auditing import RequestPoint, SessionAudit
from abridged.application.cache_misses import CacheMiss, by_cause
from abridged.application.compactions import CompactionRecord
from abridged.application.ports import Redactor
from abridged.application.redaction import DefaultRedactor

__all__ = ["CHART_ID", "report_html"]

CHART_ID = "context-chart"
TOKENS_TRACE = "context tokens"

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #1d1d1f; padding: 0 1em; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: left;
         vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.ok { color: #0a7d32; font-weight: 600; } .bad { color: #b3261e; font-weight: 600; }
details pre { white-space: pre-wrap; background: #f6f6f8; padding: 8px; max-height: 30em;
              overflow: auto; }
"""


CHART_CONFIG: dict[str, Any] = {
    "responsive": True,
    # No button or link that sends the chart (a session's figures) to a cloud service.
    "displaylogo": False,
    "showSendToCloud": False,
    "modeBarButtonsToRemove": ["sendDataToCloud", "editInChartStudio"],
}

_SCRIPT = re.compile(r"<script[^>]*>(.*?)</script>", re.DOTALL)


def content_policy(chart: str) -> str:
    """The page's Content-Security-Policy: its own inline scripts only (by their hashes: text
    from a session that got through as markup would not run), inline styles and data: images,
    and no connection, form or base anywhere."""
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"
        for body in _SCRIPT.findall(chart)
    )
    return (
        f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; "
        "img-src data:; font-src data:; connect-src 'none'; form-action 'none'; "
        "base-uri 'none'"
    )


def report_html(
    audit: SessionAudit, *, title: str | None = None, redactor: Redactor | None = None
) -> str:
    """The whole page for one audited session; secrets in the texts it quotes (summaries,
    reasons, details) redacted by `redactor` (default `DefaultRedactor()`)."""
    audit = _redacted(audit, redactor if redactor is not None else DefaultRedactor())
    title = title or f"abridged session {audit.session_id}"
    chart = _figure(audit.requests).to_html(
        full_html=False, include_plotlyjs=True, div_id=CHART_ID, config=CHART_CONFIG
    )
    verdict = (
        f'<p class="ok">Every recorded decision matches its re-derivation '
        f"({len(audit.findings)} checked).</p>"
        if audit.ok
        else f'<p class="bad">{len(audit.mismatches)} of {len(audit.findings)} recorded '
        "decisions do not match:</p>" + _mismatches(audit)
    )
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{content_policy(chart)}">'
        f"<title>{html.escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f"<p>Model {html.escape(audit.model)}; {audit.events} events; "
        f"{len(audit.requests)} requests; {len(audit.compactions)} compactions.</p>"
        f"{chart}<h2>Audit</h2>{verdict}{_compactions(audit.compactions)}"
        f"{_cache_misses(audit.cache_misses)}"
        "</body></html>\n"
    )


def _figure(requests: Sequence[RequestPoint]) -> go.Figure:
    x = [r.number for r in requests]
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(x=x, y=[r.tokens for r in requests], name=TOKENS_TRACE, mode="lines+markers")
    )
    for limit, limits, dash, color in (
        ("window", [r.window for r in requests], "dot", "#555"),
        ("threshold", [r.threshold for r in requests], "dash", "#c77c02"),
    ):
        figure.add_trace(
            go.Scatter(x=x, y=limits, name=limit, mode="lines", line={"dash": dash, "color": color})
        )
    pruned = [r for r in requests if r.pruned_before]
    figure.add_trace(
        _marks(
            pruned,
            "tool outputs pruned",
            {"symbol": "triangle-down", "size": 10, "color": "#7b3fb5"},
        )
    )
    compacted = [r for r in requests if r.compacted_before is not None]
    figure.add_trace(
        _marks(
            compacted,
            "compacted",
            {"symbol": "x", "size": 12, "color": "#b3261e"},
            text=[f"generation {r.compacted_before}" for r in compacted],
        )
    )
    usage = [r for r in requests if r.cache_read_tokens is not None]
    if usage:
        for name, values, color in (
            ("cache reads", [r.cache_read_tokens for r in usage], "#2e8b57"),
            ("cache writes", [r.cache_creation_tokens for r in usage], "#e07a5f"),
        ):
            figure.add_trace(
                go.Bar(
                    x=[r.number for r in usage],
                    y=values,
                    name=name,
                    marker_color=color,
                    opacity=0.5,
                )
            )
        figure.update_layout(barmode="stack")
    figure.update_layout(
        xaxis_title="request",
        yaxis_title="tokens",
        template="plotly_white",
        height=460,
        margin={"l": 60, "r": 20, "t": 30, "b": 50},
        legend={"orientation": "h", "y": -0.2},
    )
    return figure


def _marks(
    points: Sequence[RequestPoint], name: str, marker: dict[str, Any], **more: Any
) -> go.Scatter:
    """The requests `points` marked at their context tokens."""
    return go.Scatter(
        x=[r.number for r in points],
        y=[r.tokens for r in points],
        name=name,
        mode="markers",
        marker=marker,
        **more,
    )


def _redacted(audit: SessionAudit, redactor: Redactor) -> SessionAudit:
    # A store may predate redaction, or its host may have turned it off.
    redact = redactor.redact
    return attrs.evolve(
        audit,
        findings=tuple(attrs.evolve(f, detail=redact(f.detail)) for f in audit.findings),
        compactions=tuple(
            attrs.evolve(c, summary=redact(c.summary), reason=redact(c.reason))
            for c in audit.compactions
        ),
    )


def _mismatches(audit: SessionAudit) -> str:
    items = "".join(
        f"<li>version {f.version}, <b>{html.escape(f.event)}</b>: {html.escape(f.detail)}</li>"
        for f in audit.mismatches
    )
    return f"<ul>{items}</ul>"


def _cache_misses(misses: Sequence[CacheMiss]) -> str:
    """The prompt-cache misses the API's diagnostics reported, by cause; those no recorded
    change explains are flagged."""
    if not misses:
        return ""
    rows = []
    for cause, count in sorted(by_cause(misses).items()):
        of_cause = [m for m in misses if m.cause == cause]
        unplanned = sum(1 for m in of_cause if m.planned is False)
        tokens = sum(m.missed_tokens for m in of_cause)
        flag = f"<td class='bad'>{unplanned} not planned</td>" if unplanned else "<td></td>"
        rows.append(
            f"<tr><td>{html.escape(cause)}</td><td class='n'>{count}</td>"
            f"<td class='n'>{tokens:,}</td>{flag}</tr>"
        )
    return (
        "<h2>Prompt-cache misses</h2><table><tr><th>cause</th><th>misses</th>"
        "<th>tokens missed</th><th></th></tr>" + "".join(rows) + "</table>"
    )


def _compactions(lines: Sequence[CompactionRecord]) -> str:
    if not lines:
        return "<p>No compactions.</p>"
    head = (
        "<tr><th>#</th><th>time</th><th>trigger</th><th>tokens before → after</th>"
        "<th>messages summarized</th><th>turns kept</th><th>summary tokens</th>"
        "<th>ledger entries (tokens)</th>"
        "<th>summarizer (usage)</th><th>fallback</th></tr>"
    )
    rows = []
    for c in lines:
        usage = f"{c.summarizer_input_tokens:,} in / {c.summarizer_output_tokens:,} out"
        rows.append(
            f"<tr><td class='n'>{c.generation}</td>"
            f"<td>{c.at:%Y-%m-%d %H:%M:%S}</td><td>{html.escape(c.trigger)}</td>"
            f"<td class='n'>{c.tokens_before:,} → {c.tokens_after:,}</td>"
            f"<td class='n'>{c.messages_summarized} "
            f"({c.first_position + 1}–{c.last_position + 1})</td>"
            f"<td class='n'>{c.turns_kept}</td>"
            f"<td class='n'>{c.summary_tokens:,} / {c.summary_max_tokens:,}</td>"
            f"<td class='n'>{c.ledger_entries} ({c.ledger_tokens:,})</td>"
            f"<td>{html.escape(c.summarizer)} ({usage})</td>"
            f"<td>{html.escape(c.fallback or 'none')}</td></tr>"
            f"<tr><td></td><td colspan='9'><details><summary>summary "
            f"({html.escape(c.strategy)}, {html.escape(c.reason)})</summary>"
            f"<pre>{html.escape(c.summary)}</pre></details></td></tr>"
        )
    return f"<table class='compactions'>{head}{''.join(rows)}</table>"
