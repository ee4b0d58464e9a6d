"""A minimal chat host on the Anthropic SDK that sends its own requests through abridged.

Each line read from stdin is a user message; the reply streams to stdout. The host renders
every request itself, so it handles the two moments abridged cannot see: a prompt the
provider counts over the limit, and a "prompt is too long" answer. Notices (pruned,
compacting…, compacted) go to stderr, as a UI would show them.

    export ANTHROPIC_API_KEY=sk-ant-...
    python examples/chat_host.py --db chat.sqlite3 --user ada

Lines starting with "/" are commands: /compact, /stats, /sessions, /retry (answer the last
message again after a provider error), /quit.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any
from uuid import UUID

import anthropic

from abridged import PreparedRequest, SessionError, Sessions, bootstrap
from abridged.adapters.anthropic.request import count_tokens_body, render_request
from abridged.application.notices import Notice


def show_notice(notice: Notice) -> None:
    """What a UI shows while the context changes: one line on stderr."""
    sizes = ""
    if notice.tokens_before is not None and notice.tokens_after is not None:
        sizes = f" ({notice.tokens_before:,} → {notice.tokens_after:,} tokens)"
    print(f"[{notice.kind}] {notice.text}{sizes}", file=sys.stderr, flush=True)


def body_of(prepared: PreparedRequest) -> dict[str, Any]:
    return render_request(prepared.context, model=prepared.model, max_tokens=prepared.max_tokens)


def answer(sessions: Sessions, client: anthropic.Anthropic, session_id: UUID) -> str:
    """Sends the session's next request, streaming the reply; returns the reply's text."""
    prepared = sessions.prepare_request(session_id, on_notice=show_notice)
    if prepared.needs_count:
        # Near the limit an estimate's small error decides; the provider's count settles it.
        counted = client.messages.count_tokens(**count_tokens_body(body_of(prepared)))
        prepared = (
            sessions.check_count(session_id, counted.input_tokens, on_notice=show_notice)
            or prepared
        )
    try:
        reply = stream(client, body_of(prepared))
    except anthropic.BadRequestError as error:
        # "prompt is too long: N tokens > M maximum": compact and send once more. Any other
        # bad request raises NotAnOverflowError here, with the SDK's error as its cause.
        prepared = sessions.report_overflow(session_id, error, on_notice=show_notice)
        reply = stream(client, body_of(prepared))
    # The SDK's Message goes in as it is; its usage calibrates the estimates.
    sessions.record_reply(session_id, reply, request_estimate=prepared.context.raw_estimate)
    return "".join(block.text for block in reply.content if block.type == "text")


def stream(client: anthropic.Anthropic, body: dict[str, Any]) -> anthropic.types.Message:
    with client.messages.stream(**body) as events:
        for text in events.text_stream:
            print(text, end="", flush=True)
        message = events.get_final_message()
    print(flush=True)
    return message


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="chat.sqlite3", help="session store (SQLite file)")
    parser.add_argument("--model", default="claude-sonnet-4-6")
    parser.add_argument("--window", type=int, default=None, help="context window (tokens)")
    parser.add_argument("--max-output-tokens", type=int, default=4_096)
    parser.add_argument("--user", default="someone", help="recorded as session metadata")
    args = parser.parse_args(argv)

    client = anthropic.Anthropic()  # ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL, as the SDK reads
    sessions = bootstrap(args.db)
    session_id = sessions.start_session(
        model=args.model,
        context_window=args.window,
        max_output_tokens=args.max_output_tokens,
        system="You are a helpful assistant. Answer briefly.",
        metadata={"user": args.user, "host": "chat_host example"},
        tags=["example"],
    )
    print(f"session {session_id}", file=sys.stderr)
    for line in sys.stdin:
        text = line.strip()
        if not text:
            continue
        if text == "/quit":
            break
        try:
            command(sessions, client, session_id, text, args.user)
        except (SessionError, anthropic.APIError) as error:
            # Bad input, nothing to compact, the provider down: say so and go on. A message
            # left unanswered by a provider error is answered again with /retry.
            print(f"error: {error}", file=sys.stderr)
    return 0


def command(
    sessions: Sessions, client: anthropic.Anthropic, session_id: UUID, text: str, user: str
) -> None:
    """Runs one line of input: a command, or a user message to answer."""
    if text == "/retry":
        answer(sessions, client, session_id)
    elif text == "/compact":
        report = sessions.compact(session_id)
        print(f"compacted: {report.tokens_before:,} → {report.tokens_after:,} tokens")
    elif text == "/stats":
        stats = sessions.stats(session_id)
        print(
            f"{stats.messages} messages, {stats.requests} requests, "
            f"{stats.prompt_tokens:,} prompt tokens "
            f"({stats.cache_read_input_tokens:,} read from cache), "
            f"{stats.compactions} compactions {dict(stats.compactions_by_trigger)}"
        )
    elif text == "/sessions":
        for info in sessions.list_sessions(metadata={"user": user}).sessions:
            print(json.dumps({"id": str(info.id), "last_activity": str(info.last_activity)}))
    else:
        sessions.append_message(session_id, {"role": "user", "content": text})
        answer(sessions, client, session_id)


if __name__ == "__main__":
    sys.exit(main())
