"""Server tools through the proxy, driven by the real `anthropic` SDK against the fake API: a
paused turn (`pause_turn`) sent back as it is, and a server call made beside a client call
(agents-and-tools/tool-use/server-tools). The fake refuses any request that breaks a rule."""

from __future__ import annotations

from typing import Any

import anthropic

from abridged.application.service import Sessions
from abridged.domain.events import MessageAppended
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import FakeAnthropic

MODEL = "claude-opus-4-8"
TOOLS: list[Any] = [
    {"type": "web_search_20250305", "name": "web_search"},
    {
        "name": "run_command",
        "description": "Run a shell command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
]
SEARCH = {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {}}
FOUND = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": []}


def send(client: anthropic.Anthropic, history: list[Any]) -> Any:
    reply = client.messages.create(model=MODEL, max_tokens=400, tools=TOOLS, messages=history)
    history.append({"role": "assistant", "content": [b.to_dict() for b in reply.content]})
    return reply


def roles(store: Sessions) -> list[str]:
    (info,) = store.list_sessions().sessions  # one session: no branch was made
    return [e.message.role.value for e in store.history(info.id) if isinstance(e, MessageAppended)]


def test_a_paused_turn_goes_on_through_the_proxy(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    fake_anthropic.enqueue(
        fake.message([SEARCH], stop_reason="pause_turn"),
        fake.message([FOUND, {"type": "text", "text": "Here is the news."}]),
        fake.message("You are welcome."),
    )
    history: list[Any] = [{"role": "user", "content": "Search the news."}]
    assert send(client, history).stop_reason == "pause_turn"
    send(client, history)  # the paused reply, sent back as it is
    history.append({"role": "user", "content": "Thanks."})
    send(client, history)

    assert roles(store) == ["user", "assistant", "assistant", "user", "assistant"]
    assert fake_anthropic.violations == []


def test_a_server_call_beside_a_client_call_goes_through_the_proxy(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    run = {"type": "tool_use", "id": "toolu_01", "name": "run_command", "input": {}}
    fake_anthropic.enqueue(
        fake.message([SEARCH, run], stop_reason="tool_use"),
        fake.message([FOUND, {"type": "text", "text": "Linux, and the article says..."}]),
    )
    history: list[Any] = [{"role": "user", "content": "Find the article and run uname."}]
    send(client, history)
    result = {"type": "tool_result", "tool_use_id": "toolu_01", "content": "Linux"}
    history.append({"role": "user", "content": [result]})
    send(client, history)

    assert roles(store) == ["user", "assistant", "user", "assistant"]
    assert fake_anthropic.requests_to()[-1].body["messages"][-1]["content"][0]["type"] == (
        "tool_result"
    )
    assert fake_anthropic.violations == []


def test_an_advisor_consultation_and_a_fallback_hop_go_through_the_proxy(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    # The advisor's result answers its call in the same reply, so the next prompt may follow
    # (agents-and-tools/tool-use/advisor-tool); a fallback block stays between the thinking of
    # the model that declined and the model that answered (build-with-claude/
    # refusals-and-fallback). Both go back upstream as the SDK returned them.
    advisor = {"type": "advisor_20260301", "name": "advisor", "model": "claude-opus-4-6"}
    call = {"type": "server_tool_use", "id": "srvtoolu_02", "name": "advisor", "input": {}}
    advice = {
        "type": "advisor_tool_result",
        "tool_use_id": "srvtoolu_02",
        "content": {"type": "advisor_redacted_result", "encrypted_content": "RW5jcnlwdGVk"},
    }
    hop = {
        "type": "fallback",
        "from": {"model": "claude-fable-5"},
        "to": {"model": MODEL},
        "trigger": {"type": "refusal", "category": None},
    }
    first = {"type": "thinking", "thinking": "Weighing it.", "signature": "sig-1"}
    second = {"type": "thinking", "thinking": "Picking it up.", "signature": "sig-2"}
    fake_anthropic.enqueue(
        fake.message([call, advice, {"type": "text", "text": "Plan made."}]),
        fake.message([first, hop, second, {"type": "text", "text": "Here it is."}]),
        fake.message("Done."),
    )
    tools = [*TOOLS, advisor]
    history: list[Any] = [{"role": "user", "content": "Plan the migration."}]
    for prompt in ("Now write it.", "Thanks."):
        reply = client.beta.messages.create(
            model=MODEL, max_tokens=400, tools=tools, messages=history
        )
        history.append({"role": "assistant", "content": [b.to_dict() for b in reply.content]})
        history.append({"role": "user", "content": prompt})
    client.beta.messages.create(model=MODEL, max_tokens=400, tools=tools, messages=history)

    assert roles(store) == ["user", "assistant", "user", "assistant", "user", "assistant"]
    sent = fake_anthropic.requests_to()[-1].body["messages"]
    bare = [
        [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]] for m in sent
    ]
    assert bare[1][:2] == [call, advice]
    assert bare[3][:3] == [first, hop, second]
    assert fake_anthropic.violations == []


WHOLE_CALL = {
    "type": "server_tool_use",
    "id": "srvtoolu_03",
    "name": "web_search",
    "input": {"query": "csv parser quoting bug"},
}
FOUND_WHOLE = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_03", "content": []}


def test_a_streamed_server_call_goes_on_in_one_session_turn_after_turn(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    # The API streams a server call's input as `input_json_delta`, as it does a client
    # call's: the reply recorded holds the input the SDK built, so the history the client
    # sends back is the one stored, and no turn starts a branch.
    fake_anthropic.enqueue(
        *[fake.message([WHOLE_CALL, FOUND_WHOLE, {"type": "text", "text": f"Found {n}."}])
          for n in range(3)]
    )  # fmt: skip
    history: list[Any] = [{"role": "user", "content": "Search for the bug."}]
    for prompt in ("And the fix?", "Thanks."):
        with client.messages.stream(
            model=MODEL, max_tokens=400, tools=TOOLS, messages=history
        ) as stream:
            reply = stream.get_final_message()
        history.append({"role": "assistant", "content": [b.to_dict() for b in reply.content]})
        history.append({"role": "user", "content": prompt})
    client.messages.create(model=MODEL, max_tokens=400, tools=TOOLS, messages=history)

    assert roles(store) == ["user", "assistant", "user", "assistant", "user", "assistant"]
    sent = fake_anthropic.requests_to()[-1].body["messages"]
    assert {k: v for k, v in sent[1]["content"][0].items() if k != "cache_control"} == WHOLE_CALL
    assert fake_anthropic.violations == []
