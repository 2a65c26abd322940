"""A model behind an OpenAI-compatible chat completions API (OpenAI, and local servers that speak it:
llama.cpp's server, vLLM, Ollama): POST {base_url}/chat/completions with `tools` as functions, and the
answer's `tool_calls` back as calls.

Wire format (the Chat Completions API reference): a tool is {"type": "function", "function": {"name",
"description", "parameters": JSON Schema}}; the model's calls come in choices[0].message.tool_calls as
{"id", "type": "function", "function": {"name", "arguments": a JSON text}}; each answer goes back as a
message {"role": "tool", "tool_call_id", "content"} after the assistant message that asked for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pilot.evals.conversation import (
    AssistantTurn,
    Message,
    ModelReply,
    ModelRequest,
    ProviderError,
    ToolCall,
    ToolOutcome,
    ToolSpec,
    Usage,
    UserText,
)
from pilot.evals.model_http import ModelEndpoint, Sleep

OPENAI_URL = "https://api.openai.com/v1"


class OpenAIChat:
    """`model` at `base_url`, with `api_key` sent as a bearer token (an empty key sends no header, as a
    local server needs). `token_field` names the output limit: "max_tokens", or "max_completion_tokens"
    for OpenAI's models that refuse the older name."""

    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str = OPENAI_URL,
        *,
        token_field: str = "max_tokens",
        timeout_seconds: float = 120.0,
        retries: int = 2,
        sleep: Sleep | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        extra = {"sleep": sleep} if sleep is not None else {}
        self._endpoint = ModelEndpoint(
            base_url, headers, timeout_seconds=timeout_seconds, retries=retries, **extra
        )
        self._model = model
        self._token_field = token_field

    @property
    def name(self) -> str:
        return "openai"

    @property
    def model(self) -> str:
        return self._model

    @property
    def endpoint(self) -> str:
        return self._endpoint.shown

    async def reply(self, request: ModelRequest) -> ModelReply:
        payload = {
            "model": self._model,
            "messages": chat_messages(request),
            "tools": [chat_tool(tool) for tool in request.tools],
            "tool_choice": "auto",
            self._token_field: request.max_output_tokens,
        }
        return parse_completion(await self._endpoint.post("/chat/completions", payload))

    async def aclose(self) -> None:
        await self._endpoint.aclose()


def chat_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": dict(tool.schema)},
    }


def chat_messages(request: ModelRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}]
    messages += [chat_message(message) for message in request.messages]
    return messages


def chat_message(message: Message) -> dict[str, Any]:
    if isinstance(message, UserText):
        return {"role": "user", "content": message.text}
    if isinstance(message, ToolOutcome):
        return {"role": "tool", "tool_call_id": message.call_id, "content": message.content}
    said: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    if message.calls:
        said["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.raw or json.dumps(dict(call.arguments or {})),
                },
            }
            for call in message.calls
        ]
    return said


def parse_completion(data: Mapping[str, Any]) -> ModelReply:
    """A chat completion as a reply. Raises ProviderError("bad_answer") when it is not one."""
    try:
        choice = data["choices"][0]
        message = choice["message"]
        calls = tuple(_call(item) for item in message.get("tool_calls") or ())
        text = message.get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ProviderError("bad_answer", "the answer is not a chat completion with a message") from None
    usage = data.get("usage") or {}
    return ModelReply(
        AssistantTurn(text if isinstance(text, str) else "", calls),
        Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
        str(choice.get("finish_reason") or ""),
    )


def _call(item: Mapping[str, Any]) -> ToolCall:
    function = item["function"]
    raw = function.get("arguments") or "{}"
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        arguments = None
    if not isinstance(arguments, dict):
        arguments = None
    return ToolCall(str(item["id"]), str(function["name"]), arguments, raw if isinstance(raw, str) else "")
