"""The `Metrics` port through OpenTelemetry: counters and histograms on a meter.

Needs the `otel` extra (`pip install 'abridged[otel]'`, which installs `opentelemetry-api`);
the host configures the SDK (its `MeterProvider` and exporters) as for any instrumented
library. Without a configured SDK the API's no-op meter makes every call free.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from abridged.application.chain import current_correlation
from abridged.application.ports import MetricNames
from abridged.domain.errors import InvalidArgumentError

__all__ = ["OpenTelemetryMetrics"]

_UNITS = {
    MetricNames.SUMMARIZER_LATENCY: "s",
    MetricNames.ESTIMATE_ERROR: "1",
}
_DESCRIPTIONS = {
    MetricNames.COMPACTIONS: "Compactions, by trigger and outcome",
    MetricNames.SUPPRESSIONS: "Compactions that were due but held back by a loop guard",
    MetricNames.PRUNED_OUTPUTS: "Old tool outputs shown pruned",
    MetricNames.OVERFLOWS: "Requests found too long, by the provider or its count",
    MetricNames.SUMMARIZER_LATENCY: "Time the summarizer took per summary",
    MetricNames.ESTIMATE_ERROR: "|provider prompt tokens - estimate| / estimate, per reply",
}


class OpenTelemetryMetrics:
    """Reports the service's metrics on `meter` (default: the global meter provider's
    meter named "abridged"). Instruments are made on first use and kept.

    With `correlation_attribute` (e.g. "abridged.correlation_id"), a measurement taken inside
    a `Sessions.correlation(...)` block also carries the host's correlation id under that
    attribute name, so a metric can be tied to the request and the events it came from. Off by
    default: each id makes its own series, which a metrics backend stores for as long as it
    keeps the metric; turn it on where ids are few (a job id, a tenant) or the backend copes."""

    def __init__(
        self, meter: Any | None = None, *, correlation_attribute: str | None = None
    ) -> None:
        if correlation_attribute is not None and (
            not isinstance(correlation_attribute, str) or not correlation_attribute.strip()
        ):
            raise InvalidArgumentError(
                f"correlation_attribute is an attribute name, or None for none, "
                f"got {correlation_attribute!r:.80}"
            )
        if meter is None:
            try:
                from opentelemetry import metrics
            except ImportError as error:  # pragma: no cover - depends on the environment
                raise ImportError(
                    "OpenTelemetryMetrics needs opentelemetry-api: pip install 'abridged[otel]'"
                ) from error
            meter = metrics.get_meter("abridged")
        self._meter = meter
        self._correlation_attribute = correlation_attribute
        self._counters: dict[str, Any] = {}
        self._histograms: dict[str, Any] = {}

    def add(self, name: str, value: int = 1, attributes: Mapping[str, str] | None = None) -> None:
        """Adds `value` to the counter `name`."""
        counter = _instrument(self._counters, self._meter.create_counter, name)
        counter.add(value, attributes=self._attributes(attributes))

    def record(self, name: str, value: float, attributes: Mapping[str, str] | None = None) -> None:
        """Records `value` on the histogram `name`."""
        histogram = _instrument(self._histograms, self._meter.create_histogram, name)
        histogram.record(value, attributes=self._attributes(attributes))

    def _attributes(self, attributes: Mapping[str, str] | None) -> dict[str, str]:
        """The measurement's attributes, with the correlation id when one is asked for and
        the measurement is taken inside a correlation block."""
        named = dict(attributes or {})
        if self._correlation_attribute is not None:
            correlation_id = current_correlation()
            if correlation_id is not None:
                named[self._correlation_attribute] = correlation_id
        return named


def _instrument(made: dict[str, Any], create: Callable[..., Any], name: str) -> Any:
    """The instrument `name` from `made`, created (with its unit and description) and kept
    there on first use."""
    instrument = made.get(name)
    if instrument is None:
        instrument = create(
            name, unit=_UNITS.get(name, "1"), description=_DESCRIPTIONS.get(name, "")
        )
        made[name] = instrument
    return instrument
