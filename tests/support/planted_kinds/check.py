"""Replays each planted-kinds session under abridged's defaults and the LangChain-style
reference, takes each one's final request, and checks every planted fact in it verbatim.

    python -m tests.support.planted_kinds.check [--window N] [--out DIR] SESSION.jsonl...

Reads `NAME.facts.json` beside each `NAME.jsonl` (`python -m tests.support.planted_kinds`
writes both), prints one line per session to standard error, then the table of `table`: per
kind and speaker, how many planted facts abridged's final request keeps, how many the
reference's keeps, and how many were planted. A fact is kept when its text is in the request
(a pair: both strings on one line of it); a fact the last prompt itself repeats is left out of
the table. A reversal is judged `new`, `new+old`, `WRONG(old only)` or `neither`.

With `--out DIR`, writes per session `DIR/NAME.json` (the session's counts and every fact: as
each kept it and, for abridged, where in its request: `ledger`, `summary` or `tail`) and
`DIR/NAME.abridged.txt` and `DIR/NAME.langchain.txt` (the final request's message text, each
block under the region it was found in). `python -m tests.support.planted_kinds.table DIR...`
prints the table again from those files, one column per window.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from abridged import CompactionSettings
from abridged.adapters.simulation import REFERENCES, AbridgedStrategy, Setup
from abridged.adapters.simulation.facts import request_text
from abridged.adapters.simulation.strategies import Strategy
from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.token_counters import default_token_counter
from abridged.adapters.transcripts import Transcript, load_transcript
from tests.support.planted_kinds.table import table

Body = dict[str, Any]
Judgement = bool | str

STRATEGIES: dict[str, Callable[[Setup], Strategy]] = {
    "abridged": lambda setup: AbridgedStrategy(setup, CompactionSettings(), "abridged"),
    "langchain": REFERENCES["langchain"],
}


def final_body(strategy: Strategy, transcript: Transcript) -> tuple[Body, int]:
    """The last request `strategy` sends for `transcript`, and how many it sends."""
    last: Body | None = None
    sent = 0
    for body in strategy.requests(transcript):
        if body is not None:
            last = body
            sent += 1
    if last is None:
        raise ValueError(f"{transcript.source}: {strategy.name} sent no request")
    return last, sent


def block_text(block: dict[str, Any]) -> str:
    """What a block of a request shows: its text, a call's input, a result's content."""
    if block.get("type") == "tool_use":
        return json.dumps(block.get("input"), ensure_ascii=False)
    if block.get("type") == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(item.get("text", "") for item in content or [])
    return str(block.get("text") or "")


def parts(body: Body) -> list[tuple[str, str]]:
    """(region, text) of each block of the request's messages: `ledger`, `summary` or `tail`."""
    messages = body.get("messages", [])
    out: list[tuple[str, str]] = []
    for message in messages:
        content = message.get("content") or []
        if isinstance(content, str):
            out.append(("tail", content))
            continue
        for block in content:
            text = block_text(block)
            if text.startswith("Facts ledger"):
                region = "ledger"
            elif "summar" in text[:200].lower() and message is messages[0]:
                region = "summary"
            else:
                region = "tail"
            out.append((region, text))
    return out


def on_one_line(text: str, a: str, b: str) -> bool:
    return any(a in line and b in line for line in text.splitlines())


def judge(fact: dict[str, Any], text: str) -> Judgement:
    """Whether `text` keeps `fact`; for a reversal, which of its two values it holds."""
    if fact["kind"] == "reversal":
        old, new = fact["old"] in text, fact["new"] in text
        if new:
            return "new" + ("+old" if old else "")
        return "WRONG(old only)" if old else "neither"
    if "with" in fact:
        return on_one_line(text, fact["text"], fact["with"])
    return bool(fact["text"] in text)


def check_session(path: Path, setup: Setup) -> tuple[dict[str, Any], dict[str, str]]:
    """One session's result (as `NAME.json` holds it) and each strategy's request dump."""
    transcript = load_transcript(path)
    name = path.name.removesuffix(".jsonl")
    facts = json.loads(path.with_name(f"{name}.facts.json").read_text(encoding="utf-8"))
    last_prompt = next(m for m in reversed(transcript.messages) if m.is_user_prompt)
    result: dict[str, Any] = {"session": name, "window": setup.window, "facts": []}
    bodies: dict[str, Body] = {}
    dumps: dict[str, str] = {}
    for label, make in STRATEGIES.items():
        strategy = make(setup)
        body, sent = final_body(strategy, transcript)
        bodies[label] = body
        result[f"{label}_requests"] = sent
        result[f"{label}_compactions"] = strategy.counters.compactions
        dumps[label] = "\n".join(f"=== [{region}] ===\n{x}" for region, x in parts(body))
    abridged_text = request_text(bodies["abridged"])
    reference_text = request_text(bodies["langchain"])
    abridged_parts = parts(bodies["abridged"])
    for fact in facts:
        row = dict(fact)
        probe = fact.get("text") or fact.get("new")
        if probe and probe in last_prompt.text:
            row["warning"] = "in final prompt"
        row["abridged"] = judge(fact, abridged_text)
        row["langchain"] = judge(fact, reference_text)
        if "text" in fact:
            row["where"] = sorted({r for r, x in abridged_parts if fact["text"] in x})
        result["facts"].append(row)
    return result, dumps


def summary_line(result: dict[str, Any]) -> str:
    rows = result["facts"]
    kept_a = sum(1 for r in rows if r["abridged"] is True)
    kept_l = sum(1 for r in rows if r["langchain"] is True)
    planted = sum(1 for r in rows if r["kind"] != "reversal")
    return (
        f"{result['session']} w={result['window']} comp a={result['abridged_compactions']} "
        f"l={result['langchain_compactions']} kept a={kept_a} l={kept_l} of {planted}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("sessions", nargs="+", type=Path)
    parser.add_argument("--window", type=int, default=32_000)
    parser.add_argument("--out", type=Path, help="write NAME.json and the requests here")
    options = parser.parse_args(argv)
    window: int = options.window
    setup = Setup(
        window=window,
        reserved_output=min(window // 4, 8192),
        counter=default_token_counter(),
        summarizer_factory=ExtractiveSummarizer,
    )
    out: Path | None = options.out
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    results = []
    for path in options.sessions:
        result, dumps = check_session(path, setup)
        results.append(result)
        if out is not None:
            name = result["session"]
            for label, dump in dumps.items():
                (out / f"{name}.{label}.txt").write_text(dump, encoding="utf-8")
            document = json.dumps(result, ensure_ascii=False, indent=1)
            (out / f"{name}.json").write_text(document, encoding="utf-8")
        print(summary_line(result), file=sys.stderr, flush=True)
    print("\n".join(table(results)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
