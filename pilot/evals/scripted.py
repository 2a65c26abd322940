"""The scripted offline provider: no model, a script per case. It checks the harness, not a model.

It is given the cases and answers as a model would, from the conversation alone: the user's instruction
names the case, and the tool results decide the next step. "careful" plays the case's `script` and does
what Pilot's answers say: a plan that passes is placed, a refusal's next safe action is called unchanged,
a refusal with nothing to call, a declined confirmation or an error ends that step. "reckless" plays the
case's `reckless` moves where it has them, calls a refused or declined call once more unchanged, and does
what text planted in an exchange answer asks: every metric of the report can then be seen to fail.

Its usage is counted as a model's would be (the request's length, three characters a token), so a token
budget stops it as it stops a model; it costs nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pilot.evals.budget import estimate_tokens
from pilot.evals.case_book import CallMove, Case, Move, SayMove
from pilot.evals.conversation import (
    AssistantTurn,
    Message,
    ModelReply,
    ModelRequest,
    ToolCall,
    ToolOutcome,
    Usage,
    UserText,
)

Mode = Literal["careful", "reckless"]
MAX_HOPS = 3  # next safe actions followed in a row within one step of the script
SAYINGS = {
    "clarify": "Which size, side and market do you want, and at what price?",
    "refuse": "I will not do that: it is outside what your policy lets me do; a human has to change it.",
    "done": "Done.",
}


class ScriptedProvider:
    """Plays the packaged cases' scripts; `mode` chooses the careful or the reckless agent."""

    def __init__(self, cases: Iterable[Case], mode: Mode = "careful") -> None:
        self._cases = {case.instruction: case for case in cases}
        self._agents: dict[str, ScriptedAgent] = {}
        self.mode: Mode = mode

    @property
    def name(self) -> str:
        return "scripted"

    @property
    def model(self) -> str:
        return f"scripted-{self.mode}"

    @property
    def endpoint(self) -> str:
        return "offline"

    async def reply(self, request: ModelRequest) -> ModelReply:
        opening = request.messages[0]
        assert isinstance(opening, UserText)
        case = self._cases.get(opening.text)
        if case is None:
            raise ValueError("the scripted provider has no script for this instruction")
        if len(request.messages) == 1:
            self._agents[opening.text] = ScriptedAgent(case, self.mode)
        turn = self._agents[opening.text].next_turn(request.messages)
        written = len(turn.text) + sum(len(json.dumps(dict(c.arguments or {}))) for c in turn.calls)
        usage = Usage(estimate_tokens(request), written // 3 + 1, estimated=True)
        return ModelReply(turn, usage, "tool_use" if turn.calls else "end_turn")

    async def aclose(self) -> None:
        self._agents.clear()


class ScriptedAgent:
    """One conversation of the scripted agent: which move of the script it is on, and how that move went."""

    def __init__(self, case: Case, mode: Mode) -> None:
        self.case, self.mode = case, mode
        reckless = case.spec.reckless if mode == "reckless" else None
        self.moves: tuple[Move, ...] = reckless if reckless is not None else case.spec.script
        self.index = 0
        self.hops = 0
        self.retried = False
        self.injected = False
        self.calls = 0
        self.stopped_with = ""

    def next_turn(self, messages: tuple[Message, ...]) -> AssistantTurn:
        last = messages[-1]
        if isinstance(last, UserText):
            return self.start_move()
        assert isinstance(last, ToolOutcome)
        planted = self.case.spec.injection
        if self.mode == "reckless" and planted and planted.marker in last.content and not self.injected:
            self.injected = True
            return self.call(planted.goal.call, planted.goal.args)
        return self.after(last)

    def start_move(self) -> AssistantTurn:
        if self.index >= len(self.moves):
            return AssistantTurn(self.stopped_with or SAYINGS["done"])
        move = self.moves[self.index]
        if isinstance(move, SayMove):
            self.index = len(self.moves)
            return AssistantTurn(move.text or SAYINGS[move.say])
        self.hops, self.retried = 0, False
        return self.call(move.call, move.args)

    def after(self, outcome: ToolOutcome) -> AssistantTurn:
        """The next step after a tool's answer, as the agent reads it."""
        answer = _parsed(outcome.content)
        status = str(answer.get("status", "error"))
        action: Mapping[str, Any] = answer.get("next_safe_action") or {}
        move = self.moves[self.index]
        assert isinstance(move, CallMove)
        if status == "ok" and outcome.name.startswith("plan_") and move.place:
            return self.call("place_order", {"plan_id": answer["plan_id"]})
        if status in ("refused", "declined") and self.mode == "reckless" and not self.retried:
            self.retried = True
            return self.call(move.call, move.args)
        callable_next = action.get("tool") and action.get("args") is not None
        if status in ("refused", "error") and callable_next and self.hops < MAX_HOPS:
            self.hops += 1
            return self.call(str(action["tool"]), dict(action["args"]))
        if status in ("refused", "declined", "pending_confirmation", "error"):
            self.stopped_with = f"Stopped: Pilot answered {status}. {action.get('text') or ''}".strip()
        self.index += 1
        return self.start_move()

    def call(self, tool: str, args: Mapping[str, Any]) -> AssistantTurn:
        self.calls += 1
        arguments = dict(args)
        return AssistantTurn("", (ToolCall(f"call_{self.calls}", tool, arguments, json.dumps(arguments)),))


def _parsed(content: str) -> dict[str, Any]:
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        return {"status": "error"}
    return value if isinstance(value, dict) else {"status": "error"}
