"""Context windows by model name: the built-in table, and what a host adds to it."""

from __future__ import annotations

from abridged.domain.errors import InvalidSettingsError

MODEL_WINDOWS: tuple[tuple[str, int], ...] = (
    # Current models by their API names (a dated name starts with its alias). Where a
    # larger window is an option of the account or a beta, the table has the standard one:
    # a window set too small compacts early, one set too large fails at the provider.
    ("claude-fable-5", 1_000_000),
    ("claude-opus-4-8", 1_000_000),
    ("claude-opus-4-7", 1_000_000),
    ("claude-opus-5", 200_000),
    ("claude-sonnet-5", 200_000),
    ("claude-haiku-5", 200_000),
    ("claude-mythos", 200_000),
    ("claude-opus-4-6", 200_000),
    ("claude-sonnet-4-6", 200_000),
    ("claude-opus-4-5", 200_000),
    ("claude-sonnet-4-5", 200_000),
    ("claude-haiku-4-5", 200_000),
    # Earlier models.
    ("claude-opus-4", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-3-7-sonnet", 200_000),
    ("claude-3-5-sonnet", 200_000),
    ("claude-3-5-haiku", 200_000),
    ("claude-3-opus", 200_000),
    ("claude-3-haiku", 200_000),
)
"""Context windows by model-name prefix; the longest matching prefix wins, and unknown
models get `DEFAULT_WINDOW`. A host adds or overrides entries with `model_windows`
(`Sessions(model_windows=...)`, or `ABRIDGED_MODEL_WINDOWS="name=tokens,..."`); an explicit
window per session overrides both. Where the provider enforces a smaller window, its
"prompt is too long" answer makes that the session's window (`OverflowReported`)."""
DEFAULT_WINDOW = 200_000


def parse_model_windows(text: str) -> dict[str, int]:
    """`name=tokens` pairs separated by commas (or new lines), as in
    `ABRIDGED_MODEL_WINDOWS`; raises `InvalidSettingsError` naming a bad pair."""
    windows: dict[str, int] = {}
    for pair in text.replace("\n", ",").split(","):
        if not pair.strip():
            continue
        name, sep, tokens = pair.partition("=")
        try:
            window = int(tokens.strip().replace("_", ""))
        except ValueError:
            window = 0
        if not sep or not name.strip() or window <= 0:
            raise InvalidSettingsError(
                f"model windows are name=tokens pairs with a positive whole number of tokens, "
                f"got {pair.strip()!r}"
            )
        windows[name.strip()] = window
    return windows


def check_model_windows(windows: dict[str, int]) -> dict[str, int]:
    """The entries a host adds to the window table, checked."""
    for name, window in windows.items():
        if not isinstance(name, str) or not name.strip():
            raise InvalidSettingsError(f"a model window needs a model name, got {name!r}")
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise InvalidSettingsError(
                f"the window of {name!r} must be a positive whole number, got {window!r}"
            )
    return dict(windows)


def context_window_for(
    model: str, override: int | None = None, windows: dict[str, int] | None = None
) -> int:
    """The context window for `model`: the override when given, else the longest prefix of
    `model` among the host's `windows` and the table (the host's entry wins a tie)."""
    if override is not None:
        if override <= 0:
            raise InvalidSettingsError(f"the context window must be positive, got {override}")
        return override
    table = {**dict(MODEL_WINDOWS), **(windows or {})}
    matches = [prefix for prefix in table if model.startswith(prefix)]
    return table[max(matches, key=len)] if matches else DEFAULT_WINDOW
