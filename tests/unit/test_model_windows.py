"""Context windows by model name: the table, a host's own entries, and bad entries."""

from __future__ import annotations

import pytest

from abridged.application.service import Sessions
from abridged.domain.errors import InvalidSettingsError
from abridged.domain.settings import DEFAULT_WINDOW, context_window_for, parse_model_windows
from tests.conftest import MakeApp


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-opus-4-8", 1_000_000),
        ("claude-fable-5-1", 1_000_000),
        ("claude-haiku-4-5-20251001", 200_000),
        ("claude-sonnet-4-6", 200_000),
        ("claude-opus-4-1-20250805", 200_000),
        ("gpt-4o", DEFAULT_WINDOW),
    ],
)
def test_current_models_are_found_by_their_api_names(model: str, window: int) -> None:
    assert context_window_for(model) == window


def test_the_longest_prefix_wins_and_a_hosts_entry_wins_a_tie() -> None:
    windows = {"claude-": 100_000, "claude-sonnet-4-6": 1_000_000, "my-proxy": 32_000}

    assert context_window_for("claude-sonnet-4-6", None, windows) == 1_000_000
    assert context_window_for("claude-opus-4-8", None, windows) == 1_000_000
    assert context_window_for("claude-unknown-9", None, windows) == 100_000
    assert context_window_for("my-proxy-large", None, windows) == 32_000
    assert context_window_for("my-proxy-large", 8_000, windows) == 8_000


def test_a_service_takes_windows_as_an_argument_or_from_its_environment(
    make_app: MakeApp,
) -> None:
    app = make_app(model_windows={"house-model": 64_000})
    from_env = Sessions(
        counter=app.counter,
        summarizer=app.summarizer,
        env={
            "PERSISTENCE_MODULE": "eventsourcing.popo",
            "ABRIDGED_MODEL_WINDOWS": "house-model=48_000, other=10000",
        },
    )

    started = app.start_session(model="house-model-v2", max_output_tokens=4_000)
    from_env_started = from_env.start_session(model="house-model", max_output_tokens=4_000)

    assert app.session(started).context_window == 64_000
    assert from_env.session(from_env_started).context_window == 48_000


@pytest.mark.parametrize("text", ["house-model", "house-model=0", "=1000", "m=lots"])
def test_a_bad_window_entry_is_a_settings_error_naming_it(text: str) -> None:
    with pytest.raises(InvalidSettingsError, match="name=tokens"):
        parse_model_windows(text)


def test_a_bad_window_argument_is_a_settings_error(make_app: MakeApp) -> None:
    with pytest.raises(InvalidSettingsError, match="positive whole number"):
        make_app(model_windows={"m": -1})
