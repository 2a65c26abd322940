"""What a model and the harness say to each other, in no provider's format: the providers translate it.

A conversation is the user's instruction, then turns: the model's (text and tool calls), and the outcome
of each call it made, as Pilot's MCP server answered it. Providers (openai_chat, anthropic_messages,
scripted) turn a `ModelRequest` into their wire format and their answer back into a `ModelReply`.

Errors a provider raises are `ProviderError`s with a stable `kind`:

    ProviderError
      kind "auth"          the endpoint refused the key (401, 403): the run stops
      kind "rate_limited"  429, after the retries allowed
      kind "server"        5xx, after the retries allowed
      kind "network"       no answer: connection refused, reset, timed out
      kind "bad_answer"    an answer that is not the API's format (not JSON, no choices, no content)

Their messages are Pilot's own words with the HTTP status; never a header, a key, or the body of an
answer (some APIs echo part of a rejected key there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

ErrorKind = Literal["auth", "rate_limited", "server", "network", "bad_answer"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool as Pilot's server lists it: name, description, JSON Schema of its arguments, and whether its
    annotations say it only reads (a read is never a decision)."""

    name: str
    description: str
    schema: Mapping[str, Any]
    read_only: bool


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for. `arguments` is None when the model's arguments were not a JSON object
    (`raw` keeps what it sent, for the report)."""

    id: str
    name: str
    arguments: Mapping[str, Any] | None
    raw: str = ""


@dataclass(frozen=True, slots=True)
class UserText:
    text: str


@dataclass(frozen=True, slots=True)
class AssistantTurn:
    """What the model said in one turn: text (may be empty) and the tool calls it asked for, in order."""

    text: str
    calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The answer to one tool call, as the model will read it (the MCP result's text)."""

    call_id: str
    name: str
    content: str
    is_error: bool = False


Message = UserText | AssistantTurn | ToolOutcome


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one model call used, as the provider reported them (cache reads and writes are input), or as
    estimated from the text where no model was called (`estimated`: the scripted provider's)."""

    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.estimated or other.estimated,
        )

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call is given: the system prompt, the conversation so far and the tools."""

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    max_output_tokens: int = 1024


@dataclass(frozen=True, slots=True)
class ModelReply:
    turn: AssistantTurn
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = ""


class ProviderError(Exception):
    """A model call that did not give an answer; `kind` says why (see the module docstring)."""

    def __init__(self, kind: ErrorKind, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.status = status


class Provider(Protocol):
    """A model behind an API: it answers a request with the next turn."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def endpoint(self) -> str:
        """Where it is reached, for the report (a URL without credentials, or "offline")."""
        ...

    async def reply(self, request: ModelRequest) -> ModelReply: ...

    async def aclose(self) -> None: ...
