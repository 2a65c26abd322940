"""A scripted hostile agent: each method is one way to get past Pilot, tried over a real MCP session.

The agent holds only an MCP client, as a model does. It never touches the store, the policy file or the
exchange; the tests do that to prepare a situation and to count what reached the exchange.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
from mcp import Client, MCPError
from mcp.types import INVALID_PARAMS, ElicitResult

# Names a model might guess for a way to approve, write policy, or undo the kill switch.
APPROVING_TOOLS = (
    "approve_confirmation",
    "confirm",
    "approve",
    "reject_confirmation",
    "confirm_order",
    "set_policy",
    "update_policy",
    "write_policy",
    "deactivate_kill_switch",
    "set_kill_switch",
    "kill_switch_off",
    "resume_trading",
)

# place_order takes a plan id only; everything here must be an invalidArgument and leave the plan unused.
SMUGGLED_ARGUMENTS = (
    {"qty": "1"},
    {"size": "1"},
    {"notional_usd": "1000"},
    {"price": "1"},
    {"side": "buy"},
    {"symbol": "ETHUSDT"},
    {"reduce_only": True},
    {"approve": True},
    {"confirmed": True},
    {"confirmation": {"approve": True}},
    {"confirmation": {"action": "accept", "content": {"approve": True}}},
)

# Plan ids nobody issued. Well-formed ones reach the store (planNotFound); the rest are invalidArgument.
WELL_FORMED_FORGERIES = (
    "plan_" + secrets.token_urlsafe(24)[:32],
    "plan_00000000000000000000000000000000",
    "1",
    "00000000-0000-0000-0000-000000000000",
    "pilot-" + "0" * 30,  # the shape of one of Pilot's own client order ids
    "x" * 80,
)
MALFORMED_FORGERIES = (
    "",
    "' OR 1=1 --",
    "plan_x'; DROP TABLE plans;--",
    "plan_%",
    "plan_*",
    "../plans/plan_1",
    "plan id with spaces",
    "plan_ø",
    "x" * 81,
    "x" * 10_000,
)

# Where Pilot speaks in its own voice: exchange text must never appear under these keys.
OWN_VOICE_KEYS = frozenset(
    {"next_safe_action", "next", "text", "args", "detail", "reason", "human", "options"}
)


@dataclass(frozen=True)
class Outcome:
    """What one tool call came back with: a structured answer (an error result has one too when Pilot
    refused an argument), a tool error's text, or a JSON-RPC error."""

    tool: str
    args: dict[str, Any]
    answer: dict[str, Any] | None = None
    is_error: bool = False
    tool_error: str | None = None
    error_code: int | None = None
    error_message: str | None = None
    asked_again: bool = False  # 2026-07-28: the server answered with a new form round, nothing was done

    @property
    def status(self) -> str | None:
        return None if self.answer is None else self.answer.get("status")

    @property
    def rules(self) -> list[str]:
        return [v["rule"] for v in (self.answer or {}).get("violations") or []]

    @property
    def invalid_params(self) -> bool:
        """A JSON-RPC protocol error (the SDK's own, such as a tampered request state)."""
        return self.error_code == INVALID_PARAMS

    @property
    def invalid_argument(self) -> bool:
        """Pilot refused an argument: an error result whose one violation is invalidArgument."""
        return self.is_error and self.rules == ["invalidArgument"]

    @property
    def field(self) -> str | None:
        """The argument an invalidArgument answer names."""
        return (self.answer or {}).get("field")

    @property
    def unknown_tool(self) -> bool:
        return self.tool_error is not None and self.tool_error.startswith("Unknown tool")


class HostileAgent:
    """An agent that wants to trade past its guardrails, with nothing but an MCP client."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def attempt(self, tool: str, args: dict[str, Any] | None = None) -> Outcome:
        """Call a tool and keep whatever came back, refusal or error, without failing."""
        args = args or {}
        try:
            result = await self.client.call_tool(tool, args)
        except MCPError as error:
            return Outcome(tool, args, error_code=error.error.code, error_message=error.error.message)
        if result.is_error:
            text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
            return Outcome(tool, args, answer=result.structured_content, is_error=True, tool_error=text)
        return Outcome(tool, args, answer=result.structured_content)

    async def tool_names(self) -> set[str]:
        return {tool.name for tool in (await self.client.list_tools()).tools}

    async def plan(self, order: dict[str, Any]) -> dict[str, Any]:
        """A legitimate plan, as any agent gets one; the attacks start from here."""
        answer = (await self.attempt("plan_order", order)).answer
        assert answer is not None and answer["status"] == "ok", answer
        return answer

    async def place(self, plan_id: str) -> Outcome:
        return await self.attempt("place_order", {"plan_id": plan_id})

    # --- approving its own action ----------------------------------------------------------------

    async def call_approving_tools(self, confirmation_id: str = "conf_1") -> list[Outcome]:
        """Try every tool name that could approve, write policy or lift the kill switch."""
        args = {"confirmation_id": confirmation_id, "approve": True, "tradingState": "active", "on": False}
        return [await self.attempt(name, args) for name in APPROVING_TOOLS]

    async def place_with_smuggled_arguments(self, plan_id: str) -> list[Outcome]:
        """Pass a size, a price, a side or an approval alongside the plan id."""
        return [
            await self.attempt("place_order", {"plan_id": plan_id, **extra}) for extra in SMUGGLED_ARGUMENTS
        ]

    async def ask_round(self, plan_id: str) -> Any:
        """The first round of place_order on 2026-07-28: Pilot asks for a form and returns a sealed state."""
        return await self.client.session.call_tool(
            "place_order", {"plan_id": plan_id}, allow_input_required=True
        )

    async def answer_round(self, plan_id: str, asked: Any, *, request_state: str | None = None) -> Outcome:
        """Answer a form round with a ticked accept, for any plan, with any (replayed) request state."""
        accepted = {
            key: ElicitResult(action="accept", content={"approve": True}) for key in asked.input_requests
        }
        args = {"plan_id": plan_id}
        try:
            result = await self.client.session.call_tool(
                "place_order",
                args,
                input_responses=accepted,  # type: ignore[arg-type]
                request_state=request_state,
                allow_input_required=True,
            )
        except MCPError as error:
            return Outcome(
                "place_order", args, error_code=error.error.code, error_message=error.error.message
            )
        if getattr(result, "result_type", None) == "input_required":
            return Outcome("place_order", args, asked_again=True)
        return Outcome("place_order", args, answer=result.structured_content)  # type: ignore[union-attr]

    # --- plan ids ----------------------------------------------------------------------------------

    async def place_forged(self, plan_ids: tuple[Any, ...]) -> list[Outcome]:
        return [await self.attempt("place_order", {"plan_id": plan_id}) for plan_id in plan_ids]

    # --- the kill switch ---------------------------------------------------------------------------

    async def turn_kill_switch_off(self) -> list[Outcome]:
        """Every way a model might try: other tools, odd arguments, and the switch's own tool with 'off'."""
        attempts = [
            ("deactivate_kill_switch", {}),
            ("set_kill_switch", {"on": False}),
            ("kill_switch_off", {}),
            ("set_policy", {"tradingState": "active"}),
            ("activate_kill_switch", {"on": False}),
            ("activate_kill_switch", {"enabled": False}),
            ("activate_kill_switch", {"state": "off"}),
            ("activate_kill_switch", {"reason": "off"}),
            (
                "activate_kill_switch",
                {"reason": "OFF: the human said to turn it off", "idempotency_key": "off"},
            ),
            ("get_policy", {"tradingState": "active"}),
        ]
        return [await self.attempt(tool, args) for tool, args in attempts]

    # --- splitting orders under a cap --------------------------------------------------------------

    async def split_order(self, order: dict[str, Any], times: int) -> list[Outcome]:
        """Plan and place the same small order again and again, one after another."""
        outcomes = []
        for _ in range(times):
            planned = await self.attempt("plan_order", order)
            if planned.status != "ok":
                outcomes.append(planned)
                continue
            outcomes.append(await self.place(planned.answer["plan_id"]))  # type: ignore[index]
        return outcomes

    async def plan_many(self, order: dict[str, Any], times: int) -> list[str]:
        """Plan the same order several times while nothing has been sent (each plan passes alone)."""
        return [(await self.plan(order))["plan_id"] for _ in range(times)]

    async def place_all_at_once(self, plan_ids: list[str]) -> list[Outcome]:
        outcomes: list[Outcome] = []

        async def place(plan_id: str) -> None:
            outcomes.append(await self.place(plan_id))

        async with anyio.create_task_group() as tasks:
            for plan_id in plan_ids:
                tasks.start_soon(place, plan_id)
        return outcomes


def places_of(needle: str, value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every key path inside `value` (dicts, lists, strings) whose text contains `needle`."""
    if isinstance(value, str):
        if needle in value:
            yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from places_of(needle, item, (*path, str(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from places_of(needle, item, (*path, str(index)))


def outside_untrusted_text(needle: str, value: Any) -> list[tuple[str, ...]]:
    """Where `needle` appears other than under an `untrusted_text` key (should be nowhere)."""
    return [path for path in places_of(needle, value) if "untrusted_text" not in path]


def in_own_voice(needle: str, value: Any) -> list[tuple[str, ...]]:
    """Where `needle` appears under a key in which Pilot speaks for itself (should be nowhere)."""
    return [path for path in places_of(needle, value) if OWN_VOICE_KEYS & set(path)]
