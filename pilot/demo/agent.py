"""The demo's agent and human at the MCP client: the agent calls Pilot's tools, the human answers forms.

This is the agent's side of the wire, so the demo imports the MCP client; Pilot itself imports `mcp` only
in pilot/server.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp import Client, MCPError
from mcp.client import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call as the agent made it and Pilot answered, with the forms the human was shown meanwhile."""

    tool: str
    args: dict[str, Any]
    answer: dict[str, Any]
    forms: tuple[str, ...] = ()


class StepFailed(Exception):
    """A step did not behave as the demo shows; the message says what differed."""


def next_call(answer: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """What an agent following Pilot's instructions does after a refusal: the named call unchanged, or stop."""
    action = answer.get("next_safe_action") or {}
    tool = action.get("tool")
    return (tool, dict(action.get("args") or {})) if tool else None


class Human:
    """Plays the human at the MCP client: reads the form it is shown and ticks approve."""

    def __init__(self) -> None:
        self._shown: list[str] = []

    async def answer(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self._shown.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    def take(self) -> tuple[str, ...]:
        shown, self._shown = tuple(self._shown), []
        return shown


@dataclass
class Agent:
    """Calls Pilot's tools and keeps the transcript of the step being played."""

    client: Client
    human: Human
    entries: list[Call | str] = field(default_factory=list)

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        try:
            result = await self.client.call_tool(tool, args)
        except MCPError as error:
            raise StepFailed(f"{tool} answered with a protocol error: {error}") from None
        answer = result.structured_content or {}
        self.entries.append(Call(tool, dict(args), answer, self.human.take()))
        if result.is_error:
            text = " ".join(getattr(part, "text", "") for part in result.content)
            raise StepFailed(f"{tool} answered with an error: {text}")
        return answer

    def say(self, line: str) -> None:
        self.entries.append(line)

    @property
    def last_forms(self) -> tuple[str, ...]:
        calls = [entry for entry in self.entries if isinstance(entry, Call)]
        return calls[-1].forms if calls else ()

    def take(self) -> tuple[Call | str, ...]:
        entries, self.entries = tuple(self.entries), []
        return entries
