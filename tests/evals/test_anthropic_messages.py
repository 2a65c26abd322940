"""The Anthropic provider against a loopback stub of the Messages API: the system prompt at the top level,
tools with input_schema, `tool_use` blocks read back, every answer to one turn in one user message of
`tool_result` blocks, usage with cache tokens counted as input, and the key only in x-api-key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pilot.evals import Budget, Case, ScriptedProvider, run_evals, write_report
from pilot.evals.anthropic_messages import AnthropicMessages, messages_of
from pilot.evals.conversation import (
    AssistantTurn,
    ModelRequest,
    ProviderError,
    ToolCall,
    ToolOutcome,
    UserText,
)
from tests.evals.model_stubs import USAGE_IN, USAGE_OUT, Failure, anthropic_stub

KEY = "sk-ant-test-0d2f4b6a8c1e3a5c7e9b0d2f4a6c8e1b"
CASES = (
    "eth-buy-over-cap.es",
    "inject-remove-stop.en",
    "declined-short-no-retry.es",
    "turn-off-kill-switch.en",
)
REQUEST = ModelRequest("system", (UserText("hello"),), ())


async def no_sleep(seconds: float) -> None:
    pass


@pytest.mark.anyio
async def test_a_model_behind_the_messages_api_plays_cases_through_pilot(
    cases: tuple[Case, ...], tmp_path: Path
) -> None:
    chosen = [case for case in cases if case.id in CASES]
    with anthropic_stub(ScriptedProvider(cases).reply) as stub:
        provider = AnthropicMessages("stub-model", KEY, stub.url)
        budget = Budget(max_tokens=10**6)
        run = await run_evals(chosen, provider, budget=budget, workdir=tmp_path)
        await provider.aclose()
    assert [v.case.id for v in run.verdicts] == [c.id for c in chosen]
    assert all(v.utility and v.security and v.injection is not False for v in run.verdicts)
    assert budget.used.input_tokens == USAGE_IN * len(stub.seen)  # cache reads and writes are input
    assert budget.used.output_tokens == USAGE_OUT * len(stub.seen)
    first = stub.seen[0]
    assert first.path == "/v1/messages"
    assert first.headers["x-api-key"] == KEY and first.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in first.headers
    assert isinstance(first.body["system"], str) and "plan_order" in first.body["system"]
    assert first.body["messages"][0]["role"] == "user"
    tools = {tool["name"]: tool for tool in first.body["tools"]}
    assert tools["place_order"]["input_schema"]["required"] == ["plan_id"]


@pytest.mark.anyio
async def test_tool_results_answer_their_tool_use_blocks_in_the_next_user_message(
    cases: tuple[Case, ...], tmp_path: Path
) -> None:
    with anthropic_stub(ScriptedProvider(cases).reply) as stub:
        provider = AnthropicMessages("stub-model", KEY, stub.url)
        await run_evals([c for c in cases if c.id == "eth-buy-over-cap.en"], provider, workdir=tmp_path)
        await provider.aclose()
    messages = stub.seen[-1].body["messages"]
    assert [m["role"] for m in messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    for asked, answered in zip(messages[1::2], messages[2::2], strict=True):
        uses = [b for b in asked["content"] if b["type"] == "tool_use"]
        results = [b for b in answered["content"] if b["type"] == "tool_result"]
        assert [r["tool_use_id"] for r in results] == [u["id"] for u in uses]
        assert all(isinstance(u["input"], dict) for u in uses)
    statuses = [json.loads(m["content"][0]["content"])["status"] for m in messages[2::2]]
    assert statuses == ["refused", "ok", "filled"]


def test_answers_to_one_turn_share_one_user_message_and_errors_are_marked() -> None:
    calls = (ToolCall("a", "get_ticker", {"symbol": "BTCUSDT"}), ToolCall("b", "nope", {}))
    conversation = (
        UserText("go"),
        AssistantTurn("reading", calls),
        ToolOutcome("a", "get_ticker", "{}"),
        ToolOutcome("b", "nope", "not run: no tool named 'nope'", is_error=True),
    )
    messages = messages_of(conversation)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["type"] for b in messages[1]["content"]] == ["text", "tool_use", "tool_use"]
    results = messages[2]["content"]
    assert [(r["tool_use_id"], r.get("is_error", False)) for r in results] == [("a", False), ("b", True)]


@pytest.mark.anyio
async def test_a_refused_key_stops_the_run_and_never_reaches_the_report(
    cases: tuple[Case, ...], tmp_path: Path
) -> None:
    with anthropic_stub(ScriptedProvider(cases).reply) as stub:
        stub.failures = [
            Failure(
                401,
                b'{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}',
            )
        ]
        provider = AnthropicMessages("stub-model", KEY, stub.url)
        run = await run_evals([c for c in cases if c.id in CASES], provider, workdir=tmp_path / "work")
        await provider.aclose()
    assert run.stopped == "auth" and [u.reason for u in run.unscored] == ["auth"]
    json_path, md_path = write_report(run, tmp_path / "report")
    for text in (json_path.read_text(), md_path.read_text()):
        assert KEY not in text


@pytest.mark.anyio
async def test_an_overloaded_api_is_asked_again_then_its_failure_is_a_provider_error() -> None:
    with anthropic_stub(ScriptedProvider(()).reply) as stub:
        stub.failures = [Failure(529)] * 3
        provider = AnthropicMessages("m", KEY, stub.url, sleep=no_sleep)
        with pytest.raises(ProviderError) as error:
            await provider.reply(REQUEST)
        await provider.aclose()
    assert error.value.kind == "server" and error.value.status == 529 and len(stub.seen) == 3


@pytest.mark.anyio
async def test_an_answer_without_content_blocks_is_a_bad_answer() -> None:
    with anthropic_stub(ScriptedProvider(()).reply) as stub:
        stub.raw_answers = [b'{"type": "message", "content": "text, not blocks"}']
        provider = AnthropicMessages("m", KEY, stub.url)
        with pytest.raises(ProviderError) as error:
            await provider.reply(REQUEST)
        await provider.aclose()
    assert error.value.kind == "bad_answer"
