"""Asking a human through the client's form, before the tool body runs, and the typed answer a use case gets.

A tool that may need a human declares a parameter resolved by one of the resolvers built here. The
resolver returns `Elicit(...)` when the policy wants a human and the client can show a form; otherwise a
typed result saying why no form was shown (NoFormNeeded, NoFormPossible). The SDK hands the tool an
ElicitationResult whose accepted data is either the form or that typed result; `channel()` turns it into
the approval channel the use case asks.
"""

# No `from __future__ import annotations`: the SDK evaluates resolver signatures at runtime.

from typing import Annotated, TypeVar

from mcp import MCPError
from mcp.server.mcpserver import AcceptedElicitation, Context, Elicit, ElicitationResult
from pydantic import BaseModel, BeforeValidator, Field

from pilot.app.answers.responses import ActionAnswer, OrderAnswer
from pilot.app.answers.store_faults import StoreError
from pilot.app.human import approvals
from pilot.app.human.approvals import ClientAnswer, ClientChannel, FormAnswer, NoFormNeeded, NoFormPossible
from pilot.app.orders import cancel_and_leverage
from pilot.app.runtime.runtime import Runtime
from pilot.server import arguments

Parkable = TypeVar("Parkable", OrderAnswer, ActionAnswer)  # the answers of the tools that may park


def _only_true(value: object) -> bool:
    """The JSON boolean true approves; anything else a client sends ("true", 1, "yes", null) is a decline."""
    return value is True


class ConfirmForm(BaseModel):
    """The form a human sees. Leaving the box unticked is a decline; only the boolean true approves."""

    # Not a schema error for another type: the tool then answers "declined" (nothing sent) instead of failing.
    approve: Annotated[bool, BeforeValidator(_only_true)] = Field(
        default=False, strict=True, description="Tick to approve exactly the action described above"
    )


FormOrReason = Elicit[ConfirmForm] | NoFormNeeded | NoFormPossible
Confirmation = ElicitationResult[ConfirmForm]


def ask(prompt: str | None, ctx: Context, *, to_console: bool = False) -> FormOrReason:
    """A form when the action needs a human and the client can show one; else why no form is shown. With
    `to_console` (URL mode, see sends_to_console) the action is parked instead, for the console's page."""
    if prompt is None:
        return NoFormNeeded()
    if to_console or not shows_forms(ctx):
        return NoFormPossible()
    return Elicit(prompt, ConfirmForm)


# The first protocol revision whose tool calls carry elicitation inside input-required results: the SDK's
# resolvers put forms there, and a tool body has no channel for a server-sent URL request on it.
_INPUT_REQUIRED_ERA = "2026-07-28"


def sends_to_console(runtime: Runtime, ctx: Context) -> bool:
    """Whether a parked action of this client is sent to the console's page for it by URL-mode elicitation:
    the client declared URL mode, the console channel is open, and the session can carry a request from the
    server (2025-11-25). The decision is then made on Pilot's own page, behind the console's login, which
    the agent's host cannot answer for the human, so it is preferred to the host's form."""
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None or elicitation.url is None:
        return False
    version = ctx.protocol_version
    if version is None or version >= _INPUT_REQUIRED_ERA:
        return False
    return runtime.policy().policy.confirm.opens("console")


async def send_to_console(runtime: Runtime, ctx: Context, answer: Parkable) -> Parkable:
    """After a parked answer (pending_confirmation) in URL mode, send the human to the console's page for the
    action (elicitation/create, mode url) and journal what the client answered; the action stays parked
    whatever it answers (declining to open a page decides nothing). Returns `answer` unchanged."""
    confirmation_id = answer.confirmation_id
    if answer.status != "pending_confirmation" or not confirmation_id:
        return answer
    if not sends_to_console(runtime, ctx):
        return answer
    url = approvals.console_link(runtime, confirmation_id)
    record = await runtime.store.confirmations.get(confirmation_id)
    what = record.summary if record is not None else "an action"
    message = (
        f"{approvals.live_mark(runtime)}Pilot asks a human to approve: {what}. "
        "Approve or reject it on the console's page for it."
    )
    outcome: str
    try:
        result = await ctx.elicit_url(message, url, elicitation_id=confirmation_id)
        outcome = result.action
    except MCPError as error:  # the client refused the request: the answer still names the page
        outcome = f"error {error.error.code}"
    await approvals.note_push(runtime, confirmation_id, "mcp url", {"url": url, "answer": outcome})
    return answer


def shows_forms(ctx: Context) -> bool:
    """Whether the client declared MCP form elicitation (a URL-only elicitation cannot show the form)."""
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and not (elicitation.form is None and elicitation.url is not None)


def can_reach_human(runtime: Runtime, ctx: Context) -> bool:
    """Whether an action of this client that needs a human can get one: a form, or a channel outside it."""
    return shows_forms(ctx) or runtime.policy().policy.confirm.human_outside_client


def channel(result: object) -> ClientChannel:
    """The approval channel for what the client answered. Only an accept with the box ticked approves."""
    answer: ClientAnswer = FormAnswer(approved=False)
    if isinstance(result, AcceptedElicitation):
        data = result.data
        if isinstance(data, ConfirmForm):
            answer = FormAnswer(approved=data.approve is True)
        elif isinstance(data, NoFormNeeded | NoFormPossible):
            answer = data
    return ClientChannel(answer)


class Resolvers:
    """The resolvers of one server: each reads the policy and the server's own record at call time."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def for_plan(self, plan_id: str, ctx: Context) -> FormOrReason:
        try:
            prompt = await approvals.plan_form_prompt(self.runtime, plan_id)
        except StoreError:
            # The plan cannot be read, so no form can describe it. Fail closed: a use case told no form was
            # needed never assumes approval (it refuses with confirmationRequired); the tool body most likely
            # meets the same store failure first and answers storeUnavailable.
            return NoFormNeeded()
        return self._ask(prompt, ctx)

    async def for_close(self, symbol: str, qty: str | None, category: str, ctx: Context) -> FormOrReason:
        summary = approvals.close_summary(symbol, qty, category)
        return self._ask(approvals.action_form_prompt(self.runtime, "close_position", summary), ctx)

    async def for_cancel(
        self, symbol: str, order_id: str | None, order_link_id: str | None, ctx: Context
    ) -> FormOrReason:
        arguments.order_ids(order_id, order_link_id)
        summary = cancel_and_leverage.cancel_summary(symbol, order_id, order_link_id)
        return self._ask(approvals.action_form_prompt(self.runtime, "cancel_order", summary), ctx)

    async def for_leverage(self, symbol: str, leverage: str, ctx: Context) -> FormOrReason:
        summary = cancel_and_leverage.leverage_summary(symbol, arguments.amount("leverage", leverage))
        return self._ask(approvals.action_form_prompt(self.runtime, "set_leverage", summary), ctx)

    def _ask(self, prompt: str | None, ctx: Context) -> FormOrReason:
        return ask(prompt, ctx, to_console=prompt is not None and sends_to_console(self.runtime, ctx))
