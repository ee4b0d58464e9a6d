"""`abridged simulate`: what-if evaluation of settings and reference strategies on transcripts."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import click

from abridged.adapters.cli.common import (
    main,
    max_message_bytes_option,
    max_output_tokens_option,
    recorded_limit,
    settings_option_values,
    settings_options,
    transcript_format_option,
)
from abridged.adapters.cli.progress import counting, reading
from abridged.adapters.cli.stdin import check_one_stdin, transcript_file
from abridged.adapters.cli.terminal import printable
from abridged.adapters.compressed import base_name
from abridged.adapters.simulation import (
    REFERENCES,
    AbridgedStrategy,
    CacheRates,
    Outcome,
    Setup,
    Total,
    simulate,
    totals,
)
from abridged.adapters.simulation.run import requests_to_measure
from abridged.adapters.simulation.strategies import Strategy
from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.token_counters import default_token_counter
from abridged.adapters.transcripts import (
    Transcript,
    TranscriptError,
    load_transcript,
)
from abridged.domain.errors import InvalidSettingsError
from abridged.domain.inputs import DEFAULT_MAX_MESSAGE_BYTES
from abridged.domain.settings import PRESETS, CompactionSettings, Limits

MAX_RATE = 1_000.0
"""The largest cache rate taken (the API's are 0.1 to 2 times the input price): a larger one
would overflow the bill to infinity, which --json cannot write."""


@main.command("simulate")
@click.argument(
    "transcripts", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path)
)
@click.option("--window", type=click.IntRange(min=1_000), required=True, help="Context window.")
@max_output_tokens_option
@settings_options(
    "abridged's settings to start from.", "Change one of abridged's settings (repeatable)."
)
@click.option(
    "--compare",
    multiple=True,
    metavar="LABEL:PRESET[,KEY=VALUE...]",
    help="Another abridged configuration to run alongside (repeatable), e.g. "
    "--compare eager:default,threshold_ratio=0.5.",
)
@click.option(
    "--references",
    default=",".join(REFERENCES),
    show_default=True,
    help="Reference strategies to compare with (comma-separated; empty for none); "
    "api-compaction (the API's on-demand compaction, with abridged's settings) on request.",
)
@transcript_format_option(
    "The transcripts' format: abridged's JSONL, a Claude Code session log, OpenAI chat "
    "messages, or an Anthropic request body; auto detects it from each file."
)
@click.option(
    "--write-rate", type=click.FloatRange(min=0, max=MAX_RATE), default=1.25, show_default=True
)
@click.option(
    "--read-rate", type=click.FloatRange(min=0, max=MAX_RATE), default=0.1, show_default=True
)
@max_message_bytes_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead.")
def simulate_command(
    transcripts: tuple[Path, ...],
    window: int,
    max_output_tokens: int | None,
    preset: str,
    overrides: tuple[str, ...],
    compare: tuple[str, ...],
    references: str,
    transcript_format: str,
    write_rate: float,
    read_rate: float,
    max_message_bytes: int | None,
    as_json: bool,
) -> None:
    """Replay TRANSCRIPT... with abridged and reference strategies, side by side (`-` reads
    one transcript from standard input).

    Touches no store. For each transcript and in total: requests, prunes, compactions,
    summarizer calls and tokens, peak and mean context, billed input token-equivalents under
    prompt caching (cache write WRITE_RATE x, read READ_RATE x) and the share of the
    transcript's facts (of every kind below) the final request and the average request
    still hold verbatim (and, below, by kind: paths, commands, errors,
    test runs' counts, requests, constraints, names in backticks, names mentioned, URLs,
    numbers, arguments, values), and the recent-context
    depth: how many of the last messages a compacted request sends whole. See
    docs/evaluation.md.
    """
    for name, rate in (("--write-rate", write_rate), ("--read-rate", read_rate)):
        if not math.isfinite(rate):
            # An infinite rate bills NaN, and --json would print what no JSON parser reads.
            raise click.BadParameter(f"{rate} is not a finite number", param_hint=name)
    settings = settings_option_values(preset, overrides)
    reserve = max_output_tokens or min(8192, max(1, window // 4))
    if reserve >= window:
        raise click.BadParameter("must be below the window", param_hint="--max-output-tokens")
    try:
        Limits(window, reserve, settings)
    except InvalidSettingsError as error:
        raise click.UsageError(str(error)) from None
    check_one_stdin(transcripts)
    loaded, unread, max_message_bytes = _load_all(transcripts, transcript_format, max_message_bytes)
    if not loaded:
        raise click.ClickException("\n".join(unread))
    unknown = [r for r in references.split(",") if r and r not in CHOICES]
    if unknown:
        raise click.BadParameter(
            f"unknown reference {unknown[0]!r}; choose from {', '.join(CHOICES)}",
            param_hint="--references",
        )
    configurations = [("abridged", settings)]
    for item in compare:
        label, compared = _comparison(item)
        taken = [name for name, _ in configurations] + list(CHOICES)
        if label in taken:
            # Two configurations under one label would be summed into one total.
            raise click.BadParameter(
                f"label {label!r} is taken (labels: {', '.join(taken)}); give each its own",
                param_hint="--compare",
            )
        configurations.append((label, compared))
    makers: list[Callable[[Setup], Strategy]] = [
        _abridged(settings, label) for label, settings in configurations
    ]
    makers += [_reference(r, configurations[0][1]) for r in references.split(",") if r]
    counter = default_token_counter()
    setup = Setup(
        window, reserve, counter, ExtractiveSummarizer, max_message_bytes=max_message_bytes
    )
    # Counted in requests, not runs: one long transcript is most of the work, and a bar
    # that moved once per run would stand still through it.
    steps = sum(requests_to_measure(t) for t in loaded) * len(makers)
    rates = CacheRates(write_rate, read_rate)
    runs, started = len(makers) * len(loaded), itertools.count(1)
    with counting(total=steps, description="simulating", unit="req") as advance:

        def follow(run: str, done: int) -> None:
            if done:
                advance(done)
                return
            # A run starts: the bar names it (`run 2/10: coding.jsonl langchain`).
            source, _, strategy = run.rpartition(" ")
            shown = printable(f"{Path(source).name} {strategy}", one_line=True)
            advance(0, now=f"run {next(started)}/{runs}: {shown}")

        try:
            outcomes = simulate(loaded, setup, makers, rates, follow)
        except TranscriptError as error:
            raise click.ClickException(str(error)) from None
    notes = {t.source: list(t.notes) for t in loaded if t.notes}
    _report(outcomes, window, reserve, rates, as_json, unread, notes)


def _report(
    outcomes: list[Outcome],
    window: int,
    reserve: int,
    rates: CacheRates,
    as_json: bool,
    unread: list[str],
    notes: dict[str, list[str]],
) -> None:
    """The figures (a table, or one JSON document), then each transcript that could not be
    read and each run a refusal stopped, on standard error, with exit status 1. The JSON
    holds the import's notes and the transcripts not read too: what was changed or left out
    on the way in is part of what the figures measure."""
    if as_json:
        document = {
            "window": window,
            "max_output_tokens": reserve,
            "rates": {"write": rates.write_rate, "read": rates.read_rate},
            "outcomes": [o.to_dict() for o in outcomes],
            "totals": [t.to_dict() for t in totals(outcomes)],
            "notes": notes,
            "unread": unread,
        }
        click.echo(json.dumps(document, indent=1))
    else:
        click.echo(render_table(outcomes, window))
    stopped = [o for o in outcomes if o.refused]
    for problem in unread:
        click.echo(f"Error: not read: {problem}", err=True)
    for outcome in stopped:
        click.echo(f"Error: {outcome.strategy} stopped: {outcome.refused}", err=True)
    if stopped or unread:
        # Every run's figures are out; the status still says a session refused a message.
        raise click.exceptions.Exit(1)


def _abridged(settings: CompactionSettings, label: str) -> Callable[[Setup], Strategy]:
    return lambda setup: AbridgedStrategy(setup, settings, label)


CHOICES = (*REFERENCES, "api-compaction")


def _reference(name: str, settings: CompactionSettings) -> Callable[[Setup], Strategy]:
    if name == "api-compaction":
        # Imported here: it needs the anthropic SDK, whose import is most of the CLI's
        # start-up time, and every other command and reference runs without it.
        from abridged.adapters.simulation.api_compaction import ApiCompactionStrategy

        return lambda setup: ApiCompactionStrategy(setup, settings)
    return REFERENCES[name]


def _comparison(item: str) -> tuple[str, CompactionSettings]:
    label, sep, rest = item.partition(":")
    if not sep or not label.strip():
        raise click.BadParameter(
            f"{item!r} is not LABEL:PRESET[,KEY=VALUE...]", param_hint="--compare"
        )
    preset, *pairs = rest.split(",")
    if preset not in PRESETS:
        raise click.BadParameter(f"unknown preset {preset!r} in {item!r}", param_hint="--compare")
    return label.strip(), settings_option_values(preset, tuple(pairs))


HEADER = (
    f"{'transcript':<34} {'strategy':<15} {'req':>5} {'prn':>4} {'cmp':>4} {'sum':>4} "
    f"{'sum tok':>8} {'peak':>7} {'mean':>7} {'written':>9} {'billed':>10} {'x ref':>6} "
    f"{'facts':>6} {'avg':>6} {'depth':>5} {'min':>3} {'short':>5}"
)
KIND_LABELS = {
    "paths": "path",
    "commands": "cmd",
    "errors": "err",
    "tests": "test",
    "requests": "req",
    "constraints": "rule",
    "identifiers": "name",
    "mentions": "ment",
    "urls": "url",
    "numbers": "num",
    "arguments": "arg",
    "values": "val",
}


def render_table(outcomes: Sequence[Outcome], window: int) -> str:
    """The terminal table: a row per transcript and strategy, then the totals."""
    lines = [f"window {window:,}", HEADER, "-" * len(HEADER)]
    reference = {o.transcript: o.billed for o in outcomes if o.strategy == "langchain"}
    for o in outcomes:
        name = Path(o.transcript).stem[:34]
        if not o.applicable:
            why = f"({o.not_applicable or 'does not fit'}: not applicable)"
            lines.append(f"{name:<34} {o.strategy:<15} {why:>40}")
            continue
        ref = reference.get(o.transcript)
        ratio = f"{o.billed / ref:6.2f}" if ref else f"{'':>6}"
        lines.append(
            f"{name:<34} {o.strategy:<15} {o.requests:>5} {o.prunes:>4} {o.compactions:>4} "
            f"{o.summarizer_calls:>4} "
            f"{o.summarizer_input_tokens + o.summarizer_output_tokens:>8,} "
            f"{o.peak_tokens:>7,} {o.mean_tokens:>7,.0f} {o.cache_written:>9,} "
            f"{o.billed:>10,.0f} {ratio} {o.facts_final:>6.2f} {o.facts_mean:>6.2f} "
            f"{o.recent_depth_mean:>5.1f} {o.recent_depth_min:>3} {o.short_tails:>5}"
        )
    lines.append("-" * len(HEADER))
    totals_rows = totals(outcomes)
    ref_total = next((t.billed for t in totals_rows if t.strategy == "langchain"), None)
    for t in totals_rows:
        ratio = f"{t.billed / ref_total:6.2f}" if ref_total else f"{'':>6}"
        lines.append(
            f"{'TOTAL (' + str(t.transcripts) + ')':<34} {t.strategy:<15} {t.requests:>5} "
            f"{t.prunes:>4} {t.compactions:>4} {t.summarizer_calls:>4} "
            f"{t.summarizer_tokens:>8,} {t.peak_tokens:>7,} {t.mean_tokens:>7,.0f} "
            f"{t.cache_written:>9,} {t.billed:>10,.0f} {ratio} {t.facts_final_mean:>6.2f} "
            f"{t.facts_mean:>6.2f}  (min facts {t.facts_final_min:.2f}; recent depth min "
            f"{t.recent_depth_min}, short tails {t.short_tails})"
        )
    lines.extend(["", *render_kinds(outcomes, totals_rows)])
    return "\n".join(lines)


def render_kinds(outcomes: Sequence[Outcome], totals_rows: Sequence[Total]) -> list[str]:
    """Facts kept by the final request, per kind (a blank where a transcript has none)."""
    kinds = [k for k in KIND_LABELS if any(k in o.facts_final_by_kind for o in outcomes)]
    header = f"{'facts kept, by kind':<34} {'strategy':<15} " + " ".join(
        f"{KIND_LABELS[k]:>5}" for k in kinds
    )
    lines = [header, "-" * len(header)]

    def cells(by_kind: dict[str, float]) -> str:
        return " ".join(f"{by_kind[k]:>5.2f}" if k in by_kind else f"{'':>5}" for k in kinds)

    for o in outcomes:
        if o.applicable:
            name = Path(o.transcript).stem[:34]
            lines.append(f"{name:<34} {o.strategy:<15} {cells(o.facts_final_by_kind)}")
    lines.append("-" * len(header))
    for t in totals_rows:
        label = f"ALL ({t.transcripts})"
        lines.append(f"{label:<34} {t.strategy:<15} {cells(t.facts_by_kind)}")
    return lines


def _load_all(
    transcripts: Sequence[Path], transcript_format: str, limit_given: int | None
) -> tuple[list[Transcript], list[str], int]:
    """The transcripts read, the errors of those that could not be (one file that cannot be
    read does not cost the figures of the others), and the largest message the run takes
    (`recorded_limit`); notes on standard error."""
    loaded, unread = [], []
    largest = limit_given if limit_given is not None else DEFAULT_MAX_MESSAGE_BYTES
    for given in transcripts:
        if _sidecar(given, transcripts):
            # `simulate dir/*` names each transcript's metadata too: it is read with it.
            click.echo(f"note: {given}: the metadata of a transcript given, read with it", err=True)
            continue
        try:
            with transcript_file(given) as (path, name), reading(path, Path(name).name) as advance:
                transcript = load_transcript(path, transcript_format, advance, source=name)
            # A session would refuse it part way.
            limit, raised = recorded_limit(transcript, limit_given)
            largest = max(largest, limit)
            loaded.append(transcript)
            if raised is not None:
                click.echo(f"note: {transcript.source}: {raised}", err=True)
        except TranscriptError as error:
            # One file that cannot be read does not cost the figures of the others.
            unread.append(str(error).replace("(max_message_bytes)", "(--max-message-bytes)"))
            continue
        for note in transcript.notes:
            click.echo(f"note: {transcript.source}: {note}", err=True)
    return loaded, unread, largest


def _sidecar(path: Path, transcripts: Sequence[Path]) -> bool:
    """Whether `path` is the `X.meta.json` of a transcript `X.…` given too (the file
    `load_transcript` reads beside it)."""
    if not path.name.endswith(".meta.json"):
        return False
    stem = path.name.removesuffix(".meta.json")
    return any(
        t != path and t.parent == path.parent and Path(base_name(t)).stem == stem
        for t in transcripts
    )
