"""Loopback stubs of the model APIs, speaking their wire formats, with a scripted agent as the model.

Each stub is a real HTTP server on 127.0.0.1 (a thread). It reads a request as the API would, turns the
conversation back into the harness's terms with decoders written here, apart from the providers' encoders
(from the APIs' references: OpenAI's Chat Completions `tool_calls` and `role: tool` messages; Anthropic's
Messages `tool_use` and `tool_result` content blocks), asks the model for its turn, and answers in the
API's format with fixed usage figures. Every request is kept (path, headers, body) for the tests to read.
`failures` queues answers to give instead (an HTTP status with a body and headers), one per request.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pilot.evals.conversation import (
    AssistantTurn,
    Message,
    ModelReply,
    ModelRequest,
    ToolCall,
    ToolOutcome,
    UserText,
)

USAGE_IN, USAGE_OUT = 1000, 50  # what the stub reports per answer
Model = Callable[[ModelRequest], Any]  # async: a provider's `reply`


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Failure:
    status: int
    body: bytes = b'{"error": {"type": "stub_error", "message": "as queued"}}'
    headers: dict[str, str] = field(default_factory=dict)


class StubServer:
    """An API on 127.0.0.1: `answer(body) -> (status, json)` decides each answer."""

    def __init__(self, answer: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.seen: list[Seen] = []
        self.failures: list[Failure] = []
        self.raw_answers: list[bytes] = []  # answers to give as they are (not JSON, say), before `answer`
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                stub.seen.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                if stub.failures:
                    failure = stub.failures.pop(0)
                    self._send(failure.status, failure.body, failure.headers)
                elif stub.raw_answers:
                    self._send(200, stub.raw_answers.pop(0), {})
                else:
                    self._send(200, json.dumps(answer(body)).encode(), {})

            def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _ask(model: Model, messages: list[Message]) -> ModelReply:
    request = ModelRequest("", tuple(messages), ())
    reply = asyncio.run(model(request))
    assert isinstance(reply, ModelReply)
    return reply


# --- OpenAI chat completions ---------------------------------------------------------------------------


def openai_stub(model: Model) -> StubServer:
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        reply = _ask(model, openai_conversation(body["messages"]))
        message: dict[str, Any] = {"role": "assistant", "content": reply.turn.text or None}
        if reply.turn.calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw}}
                for c in reply.turn.calls
            ]
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if reply.turn.calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": USAGE_IN,
                "completion_tokens": USAGE_OUT,
                "total_tokens": USAGE_IN + USAGE_OUT,
            },
        }

    return StubServer(answer)


def openai_conversation(messages: list[dict[str, Any]]) -> list[Message]:
    out: list[Message] = []
    for message in messages:
        role = message["role"]
        if role == "user":
            out.append(UserText(message["content"]))
        elif role == "assistant":
            calls = tuple(
                ToolCall(
                    c["id"],
                    c["function"]["name"],
                    json.loads(c["function"]["arguments"]),
                    c["function"]["arguments"],
                )
                for c in message.get("tool_calls") or ()
            )
            out.append(AssistantTurn(message.get("content") or "", calls))
        elif role == "tool":
            name = _name_of(out, message["tool_call_id"])
            out.append(ToolOutcome(message["tool_call_id"], name, message["content"]))
    return out


# --- Anthropic messages --------------------------------------------------------------------------------


def anthropic_stub(model: Model) -> StubServer:
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        reply = _ask(model, anthropic_conversation(body["messages"]))
        content: list[dict[str, Any]] = [{"type": "text", "text": reply.turn.text}] if reply.turn.text else []
        content += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in reply.turn.calls
        ]
        return {
            "id": "msg_stub",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "tool_use" if reply.turn.calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": USAGE_IN - 200,
                "cache_creation_input_tokens": 100,
                "cache_read_input_tokens": 100,
                "output_tokens": USAGE_OUT,
            },
        }

    return StubServer(answer)


def anthropic_conversation(messages: list[dict[str, Any]]) -> list[Message]:
    out: list[Message] = []
    for message in messages:
        blocks = message["content"]
        if message["role"] == "assistant":
            text = "".join(b["text"] for b in blocks if b["type"] == "text")
            calls = tuple(
                ToolCall(b["id"], b["name"], b["input"], json.dumps(b["input"]))
                for b in blocks
                if b["type"] == "tool_use"
            )
            out.append(AssistantTurn(text, calls))
            continue
        for block in blocks:
            if block["type"] == "text":
                out.append(UserText(block["text"]))
            elif block["type"] == "tool_result":
                name = _name_of(out, block["tool_use_id"])
                out.append(
                    ToolOutcome(block["tool_use_id"], name, block["content"], bool(block.get("is_error")))
                )
    return out


def _name_of(conversation: list[Message], call_id: str) -> str:
    for message in reversed(conversation):
        if isinstance(message, AssistantTurn):
            for call in message.calls:
                if call.id == call_id:
                    return call.name
    raise AssertionError(f"a tool result for {call_id}, which no assistant turn asked for")
