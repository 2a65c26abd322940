"""The other state-changing tools: cancel_order, close_position, set_leverage, activate_kill_switch.

Each goes through the same gate as place_order: policy and trading state, confirmation when policy.json
asks for it, the journal before the request, one send, and the three outcomes kept apart.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Any

from pilot.app import kinds
from pilot.app.inputs import PlanRequest
from pilot.app.place import ConfirmationRequest, Confirmer, execute_plan
from pilot.app.plan import plan_order
from pilot.app.responses import (
    ActionAnswer,
    ExchangeText,
    NextActionOut,
    OrderAnswer,
    ViolationOut,
    violations_out,
)
from pilot.app.runtime import Runtime
from pilot.core.facts import OrderType, Side
from pilot.core.leverage import check_set_leverage
from pilot.core.violations import plain
from pilot.exchange.errors import ExchangeError, ExchangeRejected, OutcomeUnknown


async def close_position(
    runtime: Runtime,
    symbol: str,
    qty: Decimal | None,
    category: str = "linear",
    confirmer: Confirmer | None = None,
) -> OrderAnswer:
    """Shrink or close a position with a reduce-only Limit IOC at the worst price within maxSlippagePct."""
    try:
        position = await runtime.exchange.get_position(category, symbol)
    except ExchangeError as error:
        unread = ViolationOut(
            rule="facts",
            limit="all facts present",
            attempted="missing: position",
            detail=f"could not read the {symbol} position ({error.message})",
            next=_retry(),
        )
        return await _refused_close(
            runtime, symbol, unread, "the position could not be read; nothing was sent"
        )
    if position.size == 0:
        return await _refused_close(
            runtime, symbol, _nothing_to_close(symbol), "there is no position to close; nothing was sent"
        )
    side = Side.SELL if position.size > 0 else Side.BUY
    amount = abs(position.size) if qty is None else min(qty, abs(position.size))
    request = PlanRequest(symbol, side, OrderType.MARKET, amount, None, None, True, category)
    planned = await plan_order(runtime, request)
    if planned.status != "ok" or planned.plan_id is None:
        return OrderAnswer(
            status="refused",
            violations=planned.violations,
            next_safe_action=planned.next_safe_action,
            reason="the close did not pass; nothing was sent",
        )
    claim = await runtime.store.plans.claim(planned.plan_id, now=runtime.now())
    assert claim.plan is not None  # just created by this call; nobody else has its id
    return await execute_plan(
        runtime, claim.plan, origin="close_position", confirmer=confirmer, tool="close_position"
    )


async def set_leverage(
    runtime: Runtime,
    symbol: str,
    leverage: Decimal,
    category: str = "linear",
    confirmer: Confirmer | None = None,
) -> ActionAnswer:
    """Lowering is always allowed (unless halted); raising must fit maxLeverage and the instrument."""
    view = runtime.policy()
    state = await runtime.trading_state(view.policy)
    current, instrument_max = await _leverage_facts(runtime, category, symbol)
    violations = check_set_leverage(view.policy, state, symbol, current, leverage, instrument_max)
    # An invalid policy.json reads as the fail-closed policy, whose "reducing" state refuses any raise.
    data = {"symbol": symbol, "category": category, "leverage": plain(leverage)}
    if current is not None:
        data["from"] = plain(current)
    if violations:
        return await _record(
            runtime,
            "set_leverage",
            data,
            ActionAnswer(
                status="refused",
                detail=violations[0].detail,
                violations=violations_out(violations),
                next_safe_action=ViolationOut(**violations[0].to_dict()).next,
            ),
        )
    text = f"{leverage_summary(symbol, leverage)} (from {plain(current) if current else 'unknown'}x)"
    refusal = await _confirm(runtime, confirmer, "set_leverage", text, data)
    if refusal is not None:
        return refusal
    return await _write(
        runtime, "set_leverage", data, lambda: runtime.exchange.set_leverage(category, symbol, leverage)
    )


async def cancel_order(
    runtime: Runtime,
    symbol: str,
    order_id: str | None,
    order_link_id: str | None,
    category: str = "linear",
    confirmer: Confirmer | None = None,
) -> ActionAnswer:
    """Cancel one open order. Allowed in every trading state, including halted."""
    data = {"symbol": symbol, "category": category, "order_id": order_id, "order_link_id": order_link_id}
    # The ids are the agent's (possibly copied from exchange text): shown to the human as quoted data.
    which = (
        f"exchange order id «{order_id}»" if order_id else f"client order id «{order_link_id}» (untrusted)"
    )
    text = f"Cancel the open {symbol} order with {which}"
    refusal = await _confirm(runtime, confirmer, "cancel_order", text, data)
    if refusal is not None:
        return refusal
    return await _write(
        runtime,
        "cancel_order",
        data,
        lambda: runtime.exchange.cancel_order(
            category, symbol, order_id=order_id, order_link_id=order_link_id
        ),
    )


def leverage_summary(symbol: str, leverage: Decimal) -> str:
    """What a human approves for set_leverage (the form and the journal say the same)."""
    return f"Set {symbol} leverage to {plain(leverage)}x"


def cancel_summary(symbol: str, order_id: str | None, order_link_id: str | None) -> str:
    """What a human approves for cancel_order. The ids are the agent's (possibly copied from exchange text),
    so they are shown as quoted data."""
    which = (
        f"exchange order id «{order_id}»" if order_id else f"client order id «{order_link_id}» (untrusted)"
    )
    return f"Cancel the open {symbol} order with {which}"


async def activate_kill_switch(runtime: Runtime, reason: str) -> ActionAnswer:
    """Turn the kill switch on (trading becomes reducing). Only a human can turn it off, in the CLI."""
    already = await runtime.kill_switch_on()
    entry = await runtime.store.journal.append(
        kinds.KILL_SWITCH,
        {"on": True, "by": "agent", "reason": reason[:200]},
        now=runtime.now(),
        actor="agent",
    )
    return ActionAnswer(
        status="done",
        detail=("the kill switch was already on" if already else "the kill switch is on")
        + ": only orders that shrink positions, cancels and lower leverage work now; "
        "a human turns it off with `pilot kill-switch off`",
        data={"kill_switch": "on", "trading_state": "reducing"},
        journal_seq=[entry.seq],
    )


async def set_kill_switch_by_human(runtime: Runtime, on: bool, reason: str = "") -> int:
    """The human's switch (CLI only): on or off. Returns the journal entry's seq."""
    entry = await runtime.store.journal.append(
        kinds.KILL_SWITCH, {"on": on, "by": "human", "reason": reason[:200]}, now=runtime.now(), actor="human"
    )
    return entry.seq


async def _leverage_facts(
    runtime: Runtime, category: str, symbol: str
) -> tuple[Decimal | None, Decimal | None]:
    try:
        position = await runtime.exchange.get_position(category, symbol)
        current = position.leverage
    except ExchangeError:
        current = None
    try:
        instrument_max = (await runtime.exchange.get_instrument(category, symbol)).max_leverage
    except ExchangeError:
        instrument_max = None
    return current, instrument_max


async def _confirm(
    runtime: Runtime, confirmer: Confirmer | None, tool: str, text: str, data: dict[str, Any]
) -> ActionAnswer | None:
    if tool not in runtime.policy().policy.confirm.actions:
        return None
    ask = ConfirmationRequest(
        tool=tool,
        plan_id="",
        text=text,
        order=data,
        notional_usd="0",
        liquidation_distance_pct=None,
        changes=(),
    )
    verdict = "unavailable" if confirmer is None else await confirmer.confirm(ask)
    await runtime.store.journal.append(
        kinds.CONFIRMATION,
        {"tool": tool, "text": text, "verdict": verdict},
        now=runtime.now(),
        actor="human" if verdict == "approved" else "pilot",
    )
    if verdict == "approved":
        return None
    if verdict == "declined":
        return ActionAnswer(
            status="declined",
            detail="the human did not approve; nothing was sent",
            next_safe_action=NextActionOut(
                tool=None, args=None, text="declined by the human; do not retry it"
            ),
        )
    parked_id = getattr(confirmer, "parked_id", None)
    if verdict == "parked" and parked_id is not None:
        from pilot.app.confirm import pending_next  # confirm imports this module's use cases

        return ActionAnswer(
            status="pending_confirmation",
            detail="waiting for a human to approve in the CLI; nothing was sent yet",
            confirmation_id=parked_id,
            next_safe_action=pending_next(parked_id),
        )
    return ActionAnswer(
        status="refused",
        detail="this action needs a human's approval and no confirmation channel is available; nothing was sent",
        next_safe_action=NextActionOut(
            tool=None,
            args=None,
            text="stop: this needs a human",
            human="use a client with MCP form elicitation, or enable confirm.cliChannel in policy.json",
        ),
    )


async def _write(
    runtime: Runtime, tool: str, data: dict[str, Any], call: Callable[[], Awaitable[Any]]
) -> ActionAnswer:
    journal = runtime.store.journal
    key_problem = await runtime.key_problem()
    if key_problem is not None:
        return await _record(runtime, tool, data, ActionAnswer(status="refused", detail=key_problem))
    attempt = await journal.append(kinds.ACTION, {"tool": tool, "phase": "sent", **data}, now=runtime.now())
    try:
        result = await call()
    except ExchangeRejected as error:
        answer = ActionAnswer(
            status="rejected",
            detail=_failure(tool, error),
            ret_code=error.ret_code,
            exchange=ExchangeText(untrusted_text=error.untrusted_text) if error.untrusted_text else None,
        )
    except OutcomeUnknown as error:
        answer = ActionAnswer(
            status="outcome_unknown",
            detail=_failure(tool, error),
            next_safe_action=NextActionOut(
                tool="get_open_orders",
                args={"symbol": data["symbol"], "category": data["category"]},
                text="do not resend; check the current state first",
            ),
        )
    except ExchangeError as error:
        answer = ActionAnswer(status="rejected", detail=_failure(tool, error))
    else:
        answer = ActionAnswer(status="done", detail=f"{tool} done", data={**data, "result": _plain(result)})
    outcome = await journal.append(
        kinds.ACTION,
        {"tool": tool, "phase": "outcome", **answer.model_dump(mode="json", exclude_none=True)},
        now=runtime.now(),
    )
    return answer.model_copy(update={"journal_seq": [attempt.seq, outcome.seq]})


def _failure(tool: str, error: ExchangeError) -> str:
    """Pilot's own sentence for a failed write, built from the error's type and code alone.

    The adapter's message names the order by the id the agent gave, and that id may be a client order id
    the agent copied from exchange text (untrusted): repeating it here would say it in Pilot's voice.
    """
    if isinstance(error, ExchangeRejected):
        return (
            f"{tool}: the exchange refused it (retCode {error.ret_code}, {error.family}); nothing was done."
        )
    if isinstance(error, OutcomeUnknown):
        return f"{tool}: sent, but the exchange's answer was lost or unclear, so the outcome is not known."
    return f"{tool}: the exchange could not be reached or did not process it; nothing was done."


async def _record(runtime: Runtime, tool: str, data: dict[str, Any], answer: ActionAnswer) -> ActionAnswer:
    entry = await runtime.store.journal.append(
        kinds.ACTION,
        {"tool": tool, "phase": "refused", **data, **answer.model_dump(mode="json", exclude_none=True)},
        now=runtime.now(),
    )
    return answer.model_copy(update={"journal_seq": [entry.seq]})


def _plain(result: Any) -> Any:
    return result if isinstance(result, str | None) else str(result)


async def _refused_close(runtime: Runtime, symbol: str, violation: ViolationOut, reason: str) -> OrderAnswer:
    answer = OrderAnswer(
        status="refused", violations=[violation], reason=reason, next_safe_action=violation.next
    )
    entry = await runtime.store.journal.append(
        kinds.PLACE_REFUSED,
        {"tool": "close_position", "symbol": symbol, **answer.model_dump(mode="json", exclude_none=True)},
        now=runtime.now(),
    )
    return answer.model_copy(update={"journal_seq": [entry.seq]})


def _nothing_to_close(symbol: str) -> ViolationOut:
    return ViolationOut(
        rule="reduceOnly",
        limit="0",
        attempted="close",
        detail=f"there is no {symbol} position to close",
        next=NextActionOut(tool=None, args=None, text="nothing to close"),
    )


def _retry() -> NextActionOut:
    return NextActionOut(
        tool=None, args=None, text="the exchange could not be read; try again in a few seconds"
    )


async def idempotent(
    runtime: Runtime, key: str | None, tool: str, args: dict[str, Any], run: Callable[[], Awaitable[Any]]
) -> dict[str, Any]:
    """Run `run` once per idempotency key: the same key and arguments replay the first answer."""
    if key is None:
        return (await run()).model_dump(mode="json")
    store, now = runtime.store, runtime.now()
    begun = await store.idempotency.begin(key, tool=tool, args=args, now=now)
    if begun.status == "replay" and begun.response is not None:
        await store.journal.append(kinds.REPLAY, {"tool": tool, "key": key}, now=now)
        return begun.response
    if begun.status in ("conflict", "in_progress"):
        rule = "idempotencyConflict" if begun.status == "conflict" else "idempotencyInProgress"
        detail = (
            f"idempotency key {key!r} was first used by {begun.first_tool or tool} with other arguments"
            if begun.status == "conflict"
            else f"the first call with idempotency key {key!r} is still running"
        )
        answer = ActionAnswer(
            status="refused",
            detail=detail,
            violations=[
                ViolationOut(
                    rule=rule,
                    limit="one call per key",
                    attempted=key,
                    detail=detail,
                    next=NextActionOut(tool=None, args=None, text="use a new idempotency key"),
                )
            ],
            next_safe_action=NextActionOut(tool=None, args=None, text="use a new key for a different call"),
        )
        return answer.model_dump(mode="json") | {"reason": detail}
    response = (await run()).model_dump(mode="json")
    await store.idempotency.complete(key, response, now=runtime.now())
    return response
