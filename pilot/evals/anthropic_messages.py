"""A model behind Anthropic's Messages API: POST {base_url}/v1/messages with `tools`, and the answer's
`tool_use` content blocks back as calls.

Wire format (the Messages API reference): the system prompt is a top-level `system`; a tool is {"name",
"description", "input_schema"}; the model's calls are content blocks {"type": "tool_use", "id", "name",
"input": an object}; their answers go back in the next user message as blocks {"type": "tool_result",
"tool_use_id", "content", "is_error"}, all the answers to one turn in one message.
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

ANTHROPIC_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"


class AnthropicMessages:
    """`model` at `base_url`, with `api_key` sent in x-api-key."""

    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str = ANTHROPIC_URL,
        *,
        timeout_seconds: float = 120.0,
        retries: int = 2,
        sleep: Sleep | None = None,
    ) -> None:
        headers = {"x-api-key": api_key, "anthropic-version": API_VERSION}
        extra = {"sleep": sleep} if sleep is not None else {}
        self._endpoint = ModelEndpoint(
            base_url, headers, timeout_seconds=timeout_seconds, retries=retries, **extra
        )
        self._model = model

    @property
    def name(self) -> str:
        return "anthropic"

    @property
    def model(self) -> str:
        return self._model

    @property
    def endpoint(self) -> str:
        return self._endpoint.shown

    async def reply(self, request: ModelRequest) -> ModelReply:
        payload = {
            "model": self._model,
            "max_tokens": request.max_output_tokens,
            "system": request.system,
            "messages": messages_of(request.messages),
            "tools": [messages_tool(tool) for tool in request.tools],
        }
        return parse_message(await self._endpoint.post("/v1/messages", payload))

    async def aclose(self) -> None:
        await self._endpoint.aclose()


def messages_tool(tool: ToolSpec) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": dict(tool.schema)}


def messages_of(conversation: tuple[Message, ...]) -> list[dict[str, Any]]:
    """The conversation as alternating user and assistant messages; tool results join one user message."""
    messages: list[dict[str, Any]] = []
    for message in conversation:
        role, blocks = _blocks(message)
        if messages and messages[-1]["role"] == role == "user":
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    return messages


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(message, UserText):
        return "user", [{"type": "text", "text": message.text}]
    if isinstance(message, ToolOutcome):
        result = {"type": "tool_result", "tool_use_id": message.call_id, "content": message.content}
        return "user", [result | ({"is_error": True} if message.is_error else {})]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    blocks += [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.arguments or {})}
        for call in message.calls
    ]
    return "assistant", blocks


def parse_message(data: Mapping[str, Any]) -> ModelReply:
    """A Messages API answer as a reply. Raises ProviderError("bad_answer") when it is not one."""
    try:
        blocks = list(data["content"])
        texts = [str(block["text"]) for block in blocks if block.get("type") == "text"]
        calls = tuple(_call(block) for block in blocks if block.get("type") == "tool_use")
    except (KeyError, TypeError, AttributeError):
        raise ProviderError("bad_answer", "the answer is not a message with content blocks") from None
    usage = data.get("usage") or {}
    read = sum(
        int(usage.get(key) or 0)
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return ModelReply(
        AssistantTurn("\n".join(texts), calls),
        Usage(read, int(usage.get("output_tokens") or 0)),
        str(data.get("stop_reason") or ""),
    )


def _call(block: Mapping[str, Any]) -> ToolCall:
    given = block["input"]
    arguments = given if isinstance(given, dict) else None
    return ToolCall(str(block["id"]), str(block["name"]), arguments, json.dumps(given))
