"""The facts ledger keeps the values an agent passed to tools other than shells: the ids,
queries and dates a support or data agent carries on with, which no path, command or error
entry holds."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from abridged import bootstrap, render_request
from abridged.domain.ledger import carried, extract, render_ledger
from abridged.domain.ledger_extraction import CALL_CHARS
from abridged.domain.messages import Message, ToolResultBlock, ToolUseBlock


def _call(ident: str, name: str, **inputs: object) -> list[Message]:
    return [
        Message.assistant(ToolUseBlock(ident, name, dict(inputs))),
        Message.user(ToolResultBlock(ident, "ok")),
    ]


def _entries(messages: list[Message]) -> dict[str, str]:
    return {e.text: e.kind for e in extract(list(enumerate(messages)))}


def test_a_support_agents_ids_dates_and_amounts_are_kept_with_the_tool_that_took_them() -> None:
    messages = [
        Message.user("Please move my trip to an earlier flight."),
        *_call("t1", "get_reservation_details", reservation_id="JG7FMM"),
        *_call(
            "t2",
            "update_reservation_flights",
            reservation_id="JG7FMM",
            cabin="economy",
            flights=[{"flight_number": "HAT136", "date": "2024-05-21"}],
            refund=True,
            amount=120.5,
            note=None,
        ),
        *_call("t3", "cancel_reservation", reservation_id="JG7FMM"),
    ]
    entries = _entries(messages)
    assert entries["get_reservation_details(reservation_id=JG7FMM)"] == "call"
    assert (
        entries[
            "update_reservation_flights(reservation_id=JG7FMM, cabin=economy, "
            "flights.0.flight_number=HAT136, flights.0.date=2024-05-21, refund=true, "
            "amount=120.5)"
        ]
        == "call"
    )
    # The same id given to another tool is another fact: what was done with it.
    assert entries["cancel_reservation(reservation_id=JG7FMM)"] == "call"
    ledger = render_ledger(extract(list(enumerate(messages))))
    assert "Other tool calls, with their arguments:\nm2 get_reservation_details(" in ledger


def test_shell_commands_paths_file_content_and_todo_lists_are_not_listed_again_as_calls() -> None:
    messages = [
        Message.user("Fix it."),
        *_call("t1", "bash", command="pytest -q", timeout=120),
        *_call("t2", "Read", file_path="src/app/parser.py", offset=10, limit=40),
        *_call("t3", "Edit", file_path="src/app/parser.py", old_string="a", new_string="b"),
        *_call("t4", "Grep", pattern="def parse_.*", path="src/app"),
        *_call(
            "t5",
            "TodoWrite",
            todos=[{"content": "Fix the parser", "status": "pending", "activeForm": "Fixing"}],
        ),
    ]
    calls = [text for text, kind in _entries(messages).items() if kind == "call"]
    assert calls == ["Grep(pattern=def parse_.*, path=src/app)"]


def test_a_message_the_agent_sent_is_an_argument_but_a_files_body_is_content() -> None:
    label = "Retoure R-77841 angelegt, Abholung am 14.11.25. Etikett: dhl.example/r/2188AB"
    page = "# Release notes\n\nSee docs/guide/sorting.md for the new sort order.\n"
    messages = [
        Message.user("Send the customer the return label."),
        *_call("t1", "send_sms", to="+349111354343", body=label),
        *_call("t2", "create_file", path="docs/NOTES.md", body=page),
        *_call("t3", "add_comment", issue=2130, body="x" * 121),
    ]
    entries = _entries(messages)
    # One short line: what the agent told the customer, its ids and the path in it.
    assert entries[f"send_sms(to=+349111354343, body={label})"] == "call"
    assert entries["dhl.example/r/2188AB"] == "file-read"
    # A file's text, and a long comment, stay content: neither their paths nor a call.
    assert "docs/guide/sorting.md" not in entries
    calls = [text for text, kind in entries.items() if kind == "call"]
    assert calls == [f"send_sms(to=+349111354343, body={label})"]


def test_an_editors_mode_says_whether_it_read_created_or_changed_the_file() -> None:
    messages = [
        Message.user("Look first."),
        *_call("t1", "str_replace_editor", command="view", path="src/a.py"),
        *_call("t2", "str_replace_editor", command="create", path="src/b.py", file_text="x"),
        *_call("t3", "str_replace_editor", command="str_replace", path="src/c.py", old_str="x"),
    ]
    entries = _entries(messages)
    assert entries["src/a.py"] == "file-read"
    assert entries["src/b.py"] == "file-created"
    assert entries["src/c.py"] == "file-modified"
    assert not [kind for kind in entries.values() if kind == "call"]


def test_a_call_the_kept_tail_sends_is_carried_by_it_and_not_listed_twice() -> None:
    tail = [Message.user("Which one?"), *_call("t9", "lookup_order", order_id="A-77120")]
    assert carried(list(enumerate(tail)))[("call", "lookup_order(order_id=A-77120)")] == "call"


@given(
    st.dictionaries(
        # Not the helper's own parameters, nor the first argument given below.
        st.text(min_size=1, max_size=12).filter(lambda key: key not in {"ident", "name", "query"}),
        st.one_of(st.text(max_size=200), st.integers(), st.booleans(), st.none()),
        max_size=12,
    )
)
def test_a_call_entry_is_one_bounded_line_that_starts_with_the_first_argument_verbatim(
    inputs: dict[str, object],
) -> None:
    messages = [Message.user("Go."), *_call("t1", "lookup", query="JG7FMM", **inputs)]
    calls = [text for text, kind in _entries(messages).items() if kind == "call"]
    assert len(calls) == 1
    (text,) = calls
    assert len(text) <= CALL_CHARS
    assert "\n" not in text
    assert text.startswith("lookup(query=JG7FMM")
    assert text.endswith(")")


def test_after_many_compactions_a_request_still_holds_every_id_the_agent_looked_up() -> None:
    sessions = bootstrap()  # in memory, the extractive summarizer, cl100k counts
    session_id = sessions.start_session(
        model="claude-sonnet-4-5",
        context_window=8_000,
        max_output_tokens=1_000,
        tools=[{"name": "get_reservation_details", "input_schema": {"type": "object"}}],
    )
    ids = [f"R{k:03d}X{(k * 7919) % 1000:03d}" for k in range(24)]
    policy = " ".join(f"Clause {k}: fares are final unless the carrier cancels." for k in range(60))
    for k, reservation in enumerate(ids):
        sessions.append_message(
            session_id, {"role": "user", "content": f"Now check booking number {k}, please."}
        )
        sessions.prepare_request(session_id)
        call = {
            "type": "tool_use",
            "id": f"toolu_{k:04d}",
            "name": "get_reservation_details",
            "input": {"reservation_id": reservation},
        }
        sessions.record_reply(session_id, {"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{k:04d}", "content": policy}
        sessions.append_message(session_id, {"role": "user", "content": [result]})
        sessions.prepare_request(session_id)
        sessions.record_reply(session_id, {"role": "assistant", "content": "It is confirmed."})
    sessions.append_message(session_id, {"role": "user", "content": "Which ones did you check?"})
    prepared = sessions.prepare_request(session_id)
    body = render_request(prepared.context, model=prepared.model, max_tokens=prepared.max_tokens)

    assert sessions.session(session_id).generation >= 3
    shown = json.dumps(body["messages"])
    assert [reservation for reservation in ids if reservation not in shown] == []


def test_a_media_type_in_a_requests_header_is_not_a_file_read() -> None:
    # `application/json` was listed among the files read: a shell command's later lines
    # (and its first, past the command's entry) are read for paths, and a media type reads
    # as one.
    command = (
        "curl -s -X POST http://localhost:3000/api/v1/orders \\\n"
        "  -H 'Content-Type: application/json' \\\n"
        '  -H "Accept: text/html" --header=Accept:multipart/form-data \\\n'
        "  -d @fixtures/order.json | tee out/orders.log"
    )
    messages = [
        Message.user("Post an order."),
        *_call("t1", "bash", command=command),
        *_call("t2", "bash", command=f"{'echo ok; ' * 30}curl -H 'Accept: image/png' x/y.png"),
        *_call("t3", "http_get", url="http://h/a", header="Content-Type: text/plain; q=1"),
    ]
    entries = _entries(messages)

    listed = {text for text, kind in entries.items() if kind.startswith("file-")}
    media = {"application/json", "text/html", "multipart/form-data", "image/png", "text/plain"}
    assert not listed & media
    assert {"out/orders.log", "x/y.png"} <= listed  # the paths beside them still are
