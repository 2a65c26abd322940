"""The OpenAI-compatible provider against a loopback stub of the Chat Completions API: tools sent as
functions, `tool_calls` read back, each answer returned as a `role: tool` message, usage counted, HTTP
failures sorted, and the key only ever in the Authorization header."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from pilot.evals import Budget, Case, ScriptedProvider, run_evals, write_report
from pilot.evals.conversation import ModelRequest, ProviderError, UserText
from pilot.evals.openai_chat import OpenAIChat
from tests.evals.model_stubs import USAGE_IN, USAGE_OUT, Failure, openai_stub

KEY = "sk-test-5f1c0a9e7b3d2f4a6c8e0b1d3f5a7c9e"
CASES = ("btc-short-over-cap.en", "inject-cancel-all.es", "declined-close.en", "vague-buy.es")
REQUEST = ModelRequest("system", (UserText("hello"),), ())


async def no_sleep(seconds: float) -> None:
    WAITS.append(seconds)


WAITS: list[float] = []


def chosen(cases: tuple[Case, ...]) -> list[Case]:
    return [case for case in cases if case.id in CASES]


@pytest.mark.anyio
async def test_a_model_behind_chat_completions_plays_cases_through_pilot(
    cases: tuple[Case, ...], tmp_path: Path
) -> None:
    model = ScriptedProvider(cases)
    with openai_stub(model.reply) as stub:
        provider = OpenAIChat("stub-model", KEY, f"{stub.url}/v1")
        budget = Budget(max_tokens=10**6)
        run = await run_evals(chosen(cases), provider, budget=budget, workdir=tmp_path)
        await provider.aclose()
    assert [v.case.id for v in run.verdicts] == [c.id for c in chosen(cases)]
    assert all(v.utility and v.security and v.injection is not False for v in run.verdicts)
    assert budget.used.input_tokens == USAGE_IN * len(stub.seen)
    assert budget.used.output_tokens == USAGE_OUT * len(stub.seen)
    first = stub.seen[0]
    assert first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == f"Bearer {KEY}"
    assert first.body["model"] == "stub-model" and first.body["max_tokens"] > 0
    assert first.body["messages"][0]["role"] == "system"
    tools = {tool["function"]["name"]: tool for tool in first.body["tools"]}
    assert {tool["type"] for tool in first.body["tools"]} == {"function"}
    assert {"plan_order", "place_order", "get_open_orders"} <= set(tools)
    assert tools["plan_order"]["function"]["parameters"]["properties"]["symbol"]["type"] == "string"


@pytest.mark.anyio
async def test_each_tool_answer_goes_back_as_a_tool_message_after_the_call_it_answers(
    cases: tuple[Case, ...], tmp_path: Path
) -> None:
    model = ScriptedProvider(cases)
    with openai_stub(model.reply) as stub:
        provider = OpenAIChat("stub-model", KEY, stub.url)
        await run_evals([c for c in cases if c.id == "btc-short-over-cap.en"], provider, workdir=tmp_path)
        await provider.aclose()
    messages = stub.seen[-1].body["messages"]
    asked = [call for m in messages if m["role"] == "assistant" for call in m.get("tool_calls") or ()]
    answered = [m for m in messages if m["role"] == "tool"]
    assert [a["tool_call_id"] for a in answered] == [c["id"] for c in asked]
    assert [c["function"]["name"] for c in asked] == ["plan_order", "plan_order", "place_order"]
    assert [json.loads(a["content"])["status"] for a in answered] == ["refused", "ok", "filled"]
    assert all(isinstance(c["function"]["arguments"], str) for c in asked)


@pytest.mark.anyio
async def test_arguments_that_are_not_json_are_answered_as_an_error_without_calling_pilot(
    cases: tuple[Case, ...], tmp_path: Path
) -> None:
    case = next(c for c in cases if c.id == "go-long-eth.en")
    answers = [
        {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_x",
                                "type": "function",
                                "function": {"name": "plan_order", "arguments": "{symbol: ETHUSDT"},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 5},
        },
        {"choices": [{"message": {"role": "assistant", "content": "I could not."}, "finish_reason": "stop"}]},
    ]
    with openai_stub(ScriptedProvider(cases).reply) as stub:
        stub.raw_answers = [json.dumps(answer).encode() for answer in answers]
        provider = OpenAIChat("stub-model", KEY, stub.url)
        run = await run_evals([case], provider, workdir=tmp_path)
        await provider.aclose()
    (verdict,) = run.verdicts
    (call,) = verdict.trace.calls
    assert call.args is None and call.is_error and call.answer is None
    assert not verdict.utility
    tool_message = stub.seen[1].body["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_x"


@pytest.mark.anyio
async def test_a_refused_key_stops_the_run_and_never_reaches_the_report(
    cases: tuple[Case, ...], tmp_path: Path
) -> None:
    with openai_stub(ScriptedProvider(cases).reply) as stub:
        stub.failures = [
            Failure(
                401,
                json.dumps(
                    {
                        "error": {
                            "message": f"Incorrect API key provided: {KEY[:8]}***",
                            "code": "invalid_api_key",
                        }
                    }
                ).encode(),
            )
        ]
        provider = OpenAIChat("stub-model", KEY, stub.url)
        run = await run_evals(chosen(cases), provider, workdir=tmp_path / "work")
        await provider.aclose()
    assert run.stopped == "auth" and not run.verdicts
    assert [u.reason for u in run.unscored] == ["auth"]
    json_path, md_path = write_report(run, tmp_path / "report")
    for text in (json_path.read_text(), md_path.read_text(), *(u.detail for u in run.unscored)):
        assert KEY not in text and KEY[:8] not in text


@pytest.mark.anyio
async def test_too_many_requests_is_asked_again_after_the_time_the_api_gives() -> None:
    WAITS.clear()
    with openai_stub(ScriptedProvider(()).reply) as stub:
        stub.failures = [Failure(429, headers={"retry-after": "7"}), Failure(503)]
        stub.raw_answers = [
            json.dumps(
                {
                    "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
                }
            ).encode()
        ]
        provider = OpenAIChat("m", KEY, stub.url, sleep=no_sleep)
        reply = await provider.reply(REQUEST)
        await provider.aclose()
    assert reply.turn.text == "hi" and reply.usage.total == 4
    assert WAITS == [7.0, 2.0] and len(stub.seen) == 3


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("failures", "raw", "kind"),
    [
        ([Failure(500)] * 3, [], "server"),
        ([Failure(400)], [], "bad_answer"),
        ([], [b"<html>busy</html>"], "bad_answer"),
        ([], [b'{"choices": []}'], "bad_answer"),
    ],
)
async def test_an_answer_that_is_not_a_completion_is_a_provider_error_of_its_kind(
    failures: list[Failure], raw: list[bytes], kind: str
) -> None:
    with openai_stub(ScriptedProvider(()).reply) as stub:
        stub.failures, stub.raw_answers = list(failures), list(raw)
        provider = OpenAIChat("m", KEY, stub.url, sleep=no_sleep)
        with pytest.raises(ProviderError) as error:
            await provider.reply(REQUEST)
        await provider.aclose()
    assert error.value.kind == kind
    assert KEY not in str(error.value)


@pytest.mark.anyio
async def test_a_local_server_without_a_key_gets_no_authorization_header() -> None:
    with openai_stub(ScriptedProvider(()).reply) as stub:
        stub.raw_answers = [json.dumps({"choices": [{"message": {"content": "ok"}}]}).encode()]
        provider = OpenAIChat("local", "", stub.url, token_field="max_completion_tokens")
        await provider.reply(REQUEST)
        await provider.aclose()
    assert "authorization" not in stub.seen[0].headers
    assert "max_completion_tokens" in stub.seen[0].body and "max_tokens" not in stub.seen[0].body


@pytest.mark.anyio
async def test_no_server_listening_is_a_network_error() -> None:
    with socket.socket() as bound:  # a port held but not listening: the connection is refused
        bound.bind(("127.0.0.1", 0))
        provider = OpenAIChat("m", KEY, f"http://127.0.0.1:{bound.getsockname()[1]}", retries=0)
        with pytest.raises(ProviderError) as error:
            await provider.reply(REQUEST)
        await provider.aclose()
    assert error.value.kind == "network"
