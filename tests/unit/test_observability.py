"""Quiet by default, observable on demand: standard logging under `abridged.*` and the
metrics port, with the OpenTelemetry adapter read back through the SDK's in-memory reader."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader

from abridged.adapters.opentelemetry import OpenTelemetryMetrics
from abridged.application.ports import CompactionReport, HookVerdict, MetricNames
from abridged.application.service import Sessions
from abridged.domain.errors import CompactionFailedError, InvalidArgumentError
from abridged.domain.messages import Message, Role
from abridged.domain.planner import Decision
from abridged.domain.settings import CompactionSettings
from abridged.domain.usage import Usage
from tests.conftest import MakeApp
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import feed
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

ROOT = Path(__file__).resolve().parents[2]


class RecordingMetrics:
    """A `Metrics` that keeps everything it is told."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, tuple[tuple[str, str], ...]]] = Counter()
        self.records: list[tuple[str, float, dict[str, str]]] = []

    def add(self, name: str, value: int = 1, attributes: Mapping[str, str] | None = None) -> None:
        self.counts[(name, tuple(sorted((attributes or {}).items())))] += value

    def record(self, name: str, value: float, attributes: Mapping[str, str] | None = None) -> None:
        self.records.append((name, value, dict(attributes or {})))

    def total(self, name: str, **attributes: str) -> int:
        return sum(
            n
            for (key, attrs), n in self.counts.items()
            if key == name and attributes.items() <= dict(attrs).items()
        )


def start(app: Sessions, **settings: Any) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=4_000,
        max_output_tokens=500,
        tools=TOOLS,
        settings=CompactionSettings(
            keep_recent_turns=2, threshold_floor_tokens=0, tool_output_mode="keep_all", **settings
        ),
    )


def talk(app: Sessions, session_id: UUID, turns: int) -> None:
    for i in range(turns):
        for message in turn(f"Request {i}: {words(150)}", [words(150)]):
            if message.role is Role.ASSISTANT:
                prepared = app.prepare_request(session_id)
                usage = Usage(input_tokens=prepared.context.raw_estimate + 50)
                app.record_reply(session_id, message, usage, prepared.context.raw_estimate)
            else:
                app.append_message(session_id, message)


def test_the_library_prints_nothing_when_the_host_configures_no_logging() -> None:
    # A fresh interpreter, as a host's would be: a compaction, a summarizer failure (a
    # warning), and a counter fallback all happen, and not one character reaches the host.
    script = textwrap.dedent(
        """
        from abridged import bootstrap, CompactionSettings, Message
        from abridged.application.ports import SummarizerError

        class Failing:
            name = "failing"
            def summarize(self, messages, **kwargs):
                raise SummarizerError("down")

        app = bootstrap(summarizer=Failing())
        sid = app.start_session(
            model="claude-test", context_window=4000, max_output_tokens=500,
            settings=CompactionSettings(keep_recent_turns=1, threshold_floor_tokens=0),
        )
        for i in range(30):
            app.append_message(sid, Message.user(f"request {i} " + "word " * 150))
            app.prepare_request(sid)
            app.record_reply(sid, Message.assistant("answer " * 50))
        assert any(type(e).__name__ == "CompactionFailed" for e in app.history(sid))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,  # this checkout's package, as the test run imports it
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr == ""


def test_a_host_that_configures_logging_sees_the_librarys_records(
    make_app: MakeApp, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(summarizer=FakeSummarizer(fail=1))
    session_id = start(app)
    with caplog.at_level(logging.INFO, logger="abridged"):
        talk(app, session_id, turns=12)

    names = {r.name for r in caplog.records}
    # Every record comes from the library's own loggers, whichever module wrote it.
    assert all(name.startswith("abridged.application.") for name in names)
    messages = [r.getMessage() for r in caplog.records]
    assert any("summarizer failed" in m for m in messages)
    assert any("compacted" in m and str(session_id) in m for m in messages)
    assert {r.levelname for r in caplog.records} == {"INFO", "WARNING"}


def test_counters_for_compactions_suppressions_latency_and_estimate_error(
    make_app: MakeApp,
) -> None:
    metrics = RecordingMetrics()
    app = make_app(metrics=metrics, summarizer=FakeSummarizer(fail=1))
    session_id = start(app)
    talk(app, session_id, turns=12)
    app.append_message(session_id, Message.user("And now?"))
    app.compact(session_id)

    compactions = [e for e in app.history(session_id) if type(e).__name__ == "CompactionCompleted"]
    assert metrics.total(MetricNames.COMPACTIONS) == len(compactions)
    assert metrics.total(MetricNames.COMPACTIONS, trigger="threshold", outcome="fallback") == 1
    assert metrics.total(MetricNames.COMPACTIONS, trigger="manual", outcome="completed") == 1
    assert metrics.total(MetricNames.COMPACTIONS, trigger="threshold", outcome="completed") == (
        len(compactions) - 2
    )
    latencies = [r for r in metrics.records if r[0] == MetricNames.SUMMARIZER_LATENCY]
    assert len(latencies) == len(compactions)
    assert [r[2]["outcome"] for r in latencies].count("error") == 1
    assert all(r[1] >= 0 for r in latencies)
    errors = [r for r in metrics.records if r[0] == MetricNames.ESTIMATE_ERROR]
    assert len(errors) == 24
    # The provider counted 50 more than the first estimate, and calibration learned it.
    assert errors[0][2] == {"direction": "under"}
    assert errors[-1][1] < errors[0][1]
    last = app.stats(session_id).estimate_error_last
    assert last is not None
    assert abs(last) == pytest.approx(errors[-1][1])


def test_a_failed_manual_compaction_and_a_cancelled_one_are_counted(make_app: MakeApp) -> None:
    class Cancel:
        def before_compaction(
            self, session_id: UUID, decision: Decision, messages: object
        ) -> HookVerdict:
            return HookVerdict(cancel="not now")

        def after_compaction(self, session_id: UUID, report: CompactionReport) -> None:
            pass  # a hook cannot cancel a compaction the budget needs

    metrics = RecordingMetrics()
    failing = make_app(metrics=metrics, summarizer=FakeSummarizer(fail=100))
    session_id = start(failing, cooldown_messages=0)
    for message in turn(f"Request: {words(150)}", [words(150)]):
        if message.role is Role.ASSISTANT:
            failing.record_reply(session_id, message)
        else:
            failing.append_message(session_id, message)
    failing.append_message(session_id, Message.user("Go on."))
    with pytest.raises(CompactionFailedError):
        failing.compact(session_id)
    assert metrics.total(MetricNames.COMPACTIONS, trigger="manual", outcome="failed") == 1

    cancelled = make_app(metrics=metrics, hooks=Cancel())
    session_id = start(cancelled)
    talk(cancelled, session_id, turns=12)
    assert metrics.total(MetricNames.COMPACTIONS, outcome="cancelled") >= 1


def test_loop_guard_suppressions_are_counted_once_each(make_app: MakeApp) -> None:
    # A summary as large as allowed keeps the context near its threshold after compacting.
    metrics = RecordingMetrics()
    app = make_app(metrics=metrics, summarizer=FakeSummarizer(words(2_000, "fact")))
    session_id = app.start_session(
        model="claude-test",
        context_window=3_000,
        max_output_tokens=500,
        tools=TOOLS,
        settings=CompactionSettings(
            threshold_floor_tokens=0,
            cooldown_messages=6,
            retained_share=1.0,
            keep_recent_turns=10,  # fewer than the session has: there are turns to summarize
            # The scenario of a late threshold and a large summary, with the ledger off.
            threshold_ratio=0.7,
            target_ratio=1.0,
            summary_share=0.1,
            summaries_share=0.2,
            ledger_share=0.0,
            min_growth_share=0.0,
        ),
    )
    for i in range(12):
        feed(app, session_id, list(turn(f"Request {i}", [words(150)])), FakeTokenCounter())

    suppressed = [e for e in app.history(session_id) if type(e).__name__ == "CompactionSuppressed"]
    assert suppressed
    assert metrics.total(MetricNames.SUPPRESSIONS, trigger="threshold") == len(suppressed)


def test_the_opentelemetry_adapter_reports_through_the_sdk(make_app: MakeApp) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    app = make_app(metrics=OpenTelemetryMetrics(provider.get_meter("abridged")))
    session_id = start(app)
    talk(app, session_id, turns=12)

    data = reader.get_metrics_data()
    assert data is not None
    points: dict[str, list[Any]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points[metric.name] = list(metric.data.data_points)
    completed = sum(
        p.value for p in points[MetricNames.COMPACTIONS] if p.attributes["outcome"] == "completed"
    )
    assert completed == app.stats(session_id).compactions >= 1
    assert sum(p.count for p in points[MetricNames.SUMMARIZER_LATENCY]) == completed
    assert sum(p.count for p in points[MetricNames.ESTIMATE_ERROR]) == 24
    provider.shutdown()


def test_the_default_opentelemetry_meter_is_the_global_one() -> None:
    # A fresh interpreter, since a process sets its global meter provider once: the adapter
    # is made before the host configures the SDK, as a library made at import time would be,
    # and what it reports still reaches the provider the host sets afterwards.
    script = textwrap.dedent(
        """
        from opentelemetry import metrics as api
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
        from abridged.adapters.opentelemetry import OpenTelemetryMetrics
        from abridged.application.ports import MetricNames

        adapter = OpenTelemetryMetrics()
        reader = InMemoryMetricReader()
        api.set_meter_provider(MeterProvider(metric_readers=[reader]))
        adapter.add(MetricNames.COMPACTIONS, 2, {"trigger": "manual", "outcome": "completed"})
        adapter.record(MetricNames.ESTIMATE_ERROR, 0.1)
        for resource in reader.get_metrics_data().resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        value = point.value if hasattr(point, "value") else point.sum
                        print(scope.scope.name, metric.name, value)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == sorted(
        [
            f"abridged {MetricNames.COMPACTIONS} 2",
            f"abridged {MetricNames.ESTIMATE_ERROR} 0.1",
        ]
    )


def test_the_opentelemetry_adapter_carries_the_correlation_id_when_asked(
    make_app: MakeApp,
) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    metrics = OpenTelemetryMetrics(
        provider.get_meter("abridged"), correlation_attribute="abridged.correlation_id"
    )
    app = make_app(metrics=metrics)
    session_id = start(app)
    with app.correlation("req-7f3a"):
        talk(app, session_id, turns=12)
    talk(app, session_id, turns=2)

    data = reader.get_metrics_data()
    assert data is not None
    ids: list[object] = []
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == MetricNames.ESTIMATE_ERROR:
                    for point in metric.data.data_points:
                        assert isinstance(point, HistogramDataPoint)
                        named = point.attributes or {}
                        ids += [named.get("abridged.correlation_id")] * point.count
    # Each reply recorded with usage is measured once: 24 inside the block carry its id, the
    # 4 after it carry none.
    assert sorted(ids, key=str) == sorted(["req-7f3a"] * 24 + [None] * 4, key=str)
    provider.shutdown()


def test_the_opentelemetry_adapter_leaves_correlation_ids_out_by_default(
    make_app: MakeApp,
) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    app = make_app(metrics=OpenTelemetryMetrics(provider.get_meter("abridged")))
    session_id = start(app)
    with app.correlation("req-7f3a"):
        talk(app, session_id, turns=4)
    data = reader.get_metrics_data()
    assert data is not None
    attributes = [
        dict(point.attributes or {})
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        for point in metric.data.data_points
    ]
    assert attributes
    assert all("req-7f3a" not in a.values() for a in attributes)
    with pytest.raises(InvalidArgumentError):
        OpenTelemetryMetrics(provider.get_meter("abridged"), correlation_attribute=" ")
    provider.shutdown()
