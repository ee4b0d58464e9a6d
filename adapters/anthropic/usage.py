"""The Messages API's `usage` object as the domain's `Usage`: parsed here, at the boundary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from abridged.domain.usage import Usage

FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def as_usage(data: Mapping[str, Any] | Any | None) -> Usage | None:
    """Provider usage from the API's `usage` object: the SDK's `Usage` or its JSON form.

    Unknown keys are ignored and missing or null counts are 0; `None` gives `None`."""
    if data is None or (isinstance(data, Mapping) and not data):
        return None
    if isinstance(data, Mapping):
        values = {name: data.get(name) for name in FIELDS}
    else:
        values = {name: getattr(data, name, None) for name in FIELDS}
    counts: dict[str, Any] = {name: int(value or 0) for name, value in values.items()}
    return Usage(**counts)
