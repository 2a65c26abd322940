"""OKX's writes behind the venue port: create, cancel, amend, cancel-all, the position's stop, leverage.

Each request is sent once (pilot.exchange.okx.client). Sizes go out in OKX's units (contracts on a
perpetual), converted exactly from the coins Pilot judged (pilot.exchange.okx.markets).

**The position's stop.** OKX keeps no stop on the position itself: a stop that closes the whole position,
whatever its size then, is an algo order with closeFraction 1 (at most one per position, OKX 51088), a
conditional order with a stop-loss or a take-profit leg, an oco one with both. `set_trading_stop` makes the
whole-position algo say what is asked, in one write: it places one when there is none, amends its legs
(amend-algos; a leg asked away is sent as 0, which deletes it) when there is one, and cancels it when every
leg is asked away. It answers False, sending nothing, when the algo already says what is asked.

**Cancel-all** has no single endpoint for ordinary orders at OKX: the orders resting are read and cancelled
in batches (cancel-batch-orders, 20 a request; cancel-algos, 10), each batch sent once. An order a batch
could not cancel because it was already gone (its row's sCode) is left out of the ids returned. A batch that
fails after an earlier one went through leaves the outcome open (OutcomeUnknown: read the open orders).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from pilot.exchange.errors import ExchangeError, ExchangeRejected, OutcomeUnknown
from pilot.exchange.models import ExchangeOrder, OrderAck, OrderRequest
from pilot.exchange.okx import payloads as wire_
from pilot.exchange.okx.account_reads import AccountReads
from pilot.exchange.okx.client import Row, failure, parsed
from pilot.exchange.okx.error_codes import Verdict, verdict
from pilot.exchange.okx.markets import pilot_client_id, wire_client_id

BATCH = {"/api/v5/trade/cancel-batch-orders": 20, "/api/v5/trade/cancel-algos": 10}


class OrderWrites(AccountReads):
    """The writes of OkxExchange (pilot.exchange.okx.adapter)."""

    # OKX's cancel-all-after: timeOut 0 (off) or 10-120 s (docs-v5, Trade > "Cancel All After").
    countdown_range = (10, 120)

    async def set_cancel_after(self, seconds: int) -> float:
        """Set OKX's cancel-all-after countdown to `seconds` (POST /api/v5/trade/cancel-all-after, sent once):
        every order of the account is cancelled when it runs out unless set again first. The seconds OKX
        says are left (its answer's triggerTime less its ts), for the caller to verify.

        Raises:
            ExchangeRejected, OutcomeUnknown, ExchangeUnavailable as every write; ExchangeError (malformed)
                when the answer does not say when it triggers.
        """
        action = f"set cancel-all-after to {seconds} s"
        rows = await self._http.write(
            "/api/v5/trade/cancel-all-after", {"timeOut": str(seconds)}, action, operation="leverage"
        )
        return parsed(lambda: wire_.countdown_left(rows[0]), action)

    @contextlib.contextmanager
    def _rules_checked(self, category: str, symbol: str) -> Iterator[None]:
        """An order refused for its parameters: the market's rules are read again before the next judgement."""
        try:
            yield
        except ExchangeRejected as refused:
            if refused.family in ("params", "limits"):
                self.listings.refused_for_parameters(category, symbol)
            raise

    def _wire_inst(self, category: str, symbol: str) -> str:
        inst = self._inst(category, symbol)
        if inst is None:  # the core judged a market the exchange listed: this is never reached with one
            raise ValueError(f"{symbol} names no OKX {category} market")
        return inst

    async def create_order(self, request: OrderRequest) -> OrderAck:
        """Send one create request, exactly once (POST /api/v5/trade/order).

        Raises:
            ExchangeRejected: a definite no (nothing executed).
            OutcomeUnknown: it may have been executed (look it up by client order id; never resend);
                DuplicateOrderLinkId when OKX says the client order id is taken (51016).
            ExchangeUnavailable: not processed (the connection was never made).
        """
        action = f"create order {request.order_link_id}"
        inst = self._wire_inst(request.category, request.symbol)
        unit = await self._contract(request.category, request.symbol)
        body = wire_.order_body(request, inst, unit)
        with self._rules_checked(request.category, request.symbol):
            rows = await self._http.write(
                "/api/v5/trade/order", body, action, operation="create", link_id=request.order_link_id
            )

        def ack() -> OrderAck:
            return OrderAck(
                order_id=str(rows[0]["ordId"]), order_link_id=pilot_client_id(str(rows[0]["clOrdId"]))
            )

        return parsed(ack, action, operation="create")

    async def cancel_order(
        self,
        category: str,
        symbol: str,
        *,
        order_id: str | None = None,
        order_link_id: str | None = None,
        waiting_kind: str = "",
    ) -> str:
        """Cancel one order by exchange id or client id; return the exchange's order id. An algo order
        (its id "algo:" and OKX's algoId; or, named by client id, one waiting for its trigger: `waiting_kind`
        set) goes to cancel-algos, which takes OKX's algoId only: a client id is looked up first."""
        if not order_id and not order_link_id:
            raise ValueError("cancel_order needs order_id or order_link_id")
        action = f"cancel order {order_id or order_link_id}"
        inst = self._wire_inst(category, symbol)
        if not order_id and waiting_kind:
            order_id = await self._algo_id(category, symbol, order_link_id or "", action)
        if order_id and order_id.startswith(wire_.ALGO_PREFIX):
            body: Any = [{"instId": inst, "algoId": order_id.removeprefix(wire_.ALGO_PREFIX)}]
            await self._http.write("/api/v5/trade/cancel-algos", body, action, operation="cancel")
            return order_id
        which = {"ordId": order_id} if order_id else {"clOrdId": wire_client_id(order_link_id or "")}
        rows = await self._http.write(
            "/api/v5/trade/cancel-order", {"instId": inst, **which}, action, operation="cancel"
        )
        return parsed(lambda: str(rows[0]["ordId"]), action, operation="cancel")

    async def _algo_id(self, category: str, symbol: str, link: str, action: str) -> str:
        """The port's id of the algo order waiting under client id `link` (nothing is sent when none is).

        Raises:
            ExchangeRejected: no such order waits (OKX's own answer to a cancel of an unknown order, 51400).
        """
        waiting = [o for o in await self.get_open_orders(category, symbol) if not o.is_ordinary]
        found = next((o.order_id for o in waiting if o.order_link_id == link), None)
        if found is None:
            raise failure(51400, action, "cancel")  # no text of its own: nothing from OKX to carry
        return found

    async def amend_order(
        self,
        category: str,
        symbol: str,
        *,
        order_id: str | None = None,
        order_link_id: str | None = None,
        qty: Decimal | None = None,
        price: Decimal | None = None,
    ) -> str:
        """Amend one open order's quantity and/or price (POST /api/v5/trade/amend-order); return its id."""
        if not order_id and not order_link_id:
            raise ValueError("amend_order needs order_id or order_link_id")
        if order_id and order_id.startswith(wire_.ALGO_PREFIX):
            raise ValueError("an algo order is not amended here: plan_amend changes ordinary orders only")
        action = f"amend order {order_id or order_link_id}"
        body: Row = {"instId": self._wire_inst(category, symbol)}
        body |= {"ordId": order_id} if order_id else {"clOrdId": wire_client_id(order_link_id or "")}
        if qty is not None:
            unit = await self._contract(category, symbol)
            body["newSz"] = wire_.wire(unit.to_contracts(qty))
        if price is not None:
            body["newPx"] = wire_.wire(price)
        with self._rules_checked(category, symbol):
            rows = await self._http.write("/api/v5/trade/amend-order", body, action, operation="amend")
        return parsed(lambda: str(rows[0].get("ordId") or order_id or ""), action, operation="amend")

    async def cancel_all_orders(
        self, category: str, symbol: str | None = None, *, include_stops: bool = False
    ) -> list[str]:
        """Cancel the resting orders of a category (or of one symbol); with `include_stops`, the position's
        stops and the trigger orders too (their ids "algo:..."). The ids cancelled."""
        action = f"cancel all {category} orders" + (f" on {symbol}" if symbol else "")
        orders = await self.get_open_orders(category, symbol)
        ordinary = [o for o in orders if o.is_ordinary]
        algos = [o for o in orders if not o.is_ordinary] if include_stops else []
        cancelled: list[str] = []
        for path, rows in (
            ("/api/v5/trade/cancel-batch-orders", [self._cancel_row(o, "ordId") for o in ordinary]),
            ("/api/v5/trade/cancel-algos", [self._cancel_row(o, "algoId") for o in algos]),
        ):
            for start in range(0, len(rows), BATCH[path]):
                batch = rows[start : start + BATCH[path]]
                cancelled += await self._cancel_batch(path, batch, action, done=bool(cancelled))
        return cancelled

    def _cancel_row(self, order: ExchangeOrder, key: str) -> Row:
        inst = self._wire_inst(order.category, order.symbol)
        return {"instId": inst, key: order.order_id.removeprefix(wire_.ALGO_PREFIX)}

    async def _cancel_batch(self, path: str, batch: list[Row], action: str, *, done: bool) -> list[str]:
        """One batch of cancels, sent once: the ids it cancelled. Rows OKX refused one by one (already
        filled, already cancelled) are left out; a row whose outcome is open makes the whole unknown."""
        try:
            rows = await self._http.write(path, batch, action, operation="cancel", batch=True)
        except ExchangeError as error:
            if done and not isinstance(error, OutcomeUnknown):  # earlier batches went through
                raise OutcomeUnknown(f"{action}: some orders were cancelled, then a batch failed.") from None
            raise
        algo = path.endswith("cancel-algos")
        ids: list[str] = []
        for sent, row in zip(batch, rows, strict=False):
            code = int(row.get("sCode") or 0)
            if code and verdict(code, "cancel") is Verdict.UNKNOWN:
                raise failure(code, action, "cancel", text=str(row.get("sMsg") or ""))
            if not code:
                key = "algoId" if algo else "ordId"
                ids.append((wire_.ALGO_PREFIX if algo else "") + str(row.get(key) or sent[key]))
        return ids

    async def set_trading_stop(
        self, category: str, symbol: str, *, stop_loss: Decimal | None, take_profit: Decimal | None
    ) -> bool:
        """Set (or with 0, remove) the whole position's stop-loss and take-profit: the closeFraction-1 algo
        order (see the module's docstring); None leaves a leg as it is. False: nothing to change, nothing sent.
        """
        action = f"set the {symbol} trading stop"
        inst = self._wire_inst(category, symbol)
        current = await self._whole_stop(category, symbol)
        was = (current.stop_loss, current.take_profit) if current is not None else (None, None)
        wanted = tuple(
            (asked if asked else None) if asked is not None else kept
            for asked, kept in ((stop_loss, was[0]), (take_profit, was[1]))
        )
        if wanted == was:
            return False
        if current is None:
            await self._place_whole_stop(category, symbol, inst, wanted[0], wanted[1], action)
        elif wanted == (None, None):
            body: Any = [{"instId": inst, "algoId": current.order_id.removeprefix(wire_.ALGO_PREFIX)}]
            await self._http.write("/api/v5/trade/cancel-algos", body, action, operation="stop")
        else:
            legs = wire_.tpsl_legs(_change(wanted[0], was[0]), _change(wanted[1], was[1]), new=False)
            amend = {"instId": inst, "algoId": current.order_id.removeprefix(wire_.ALGO_PREFIX), **legs}
            await self._http.write("/api/v5/trade/amend-algos", amend, action, operation="stop")
        return True

    async def _whole_stop(self, category: str, symbol: str) -> ExchangeOrder | None:
        orders = await self.get_open_orders(category, symbol)
        return next((o for o in orders if o.stop_order_type in ("StopLoss", "TakeProfit")), None)

    async def _place_whole_stop(
        self, category: str, symbol: str, inst: str, stop: Decimal | None, target: Decimal | None, action: str
    ) -> None:
        position = await self.get_position(category, symbol)
        body: Row = {
            "instId": inst,
            "tdMode": "cross",
            "side": "buy" if position.size < 0 else "sell",
            "ordType": "oco" if stop is not None and target is not None else "conditional",
            "closeFraction": "1",
            "reduceOnly": True,
            **wire_.tpsl_legs(stop, target, new=True),
        }
        await self._http.write("/api/v5/trade/order-algo", body, action, operation="stop")

    async def set_leverage(self, category: str, symbol: str, leverage: Decimal) -> None:
        """Set the perpetual's cross-margin leverage (/api/v5/account/set-leverage); an unchanged one is
        answered code 0 like any other."""
        value = wire_.wire(leverage)
        body = {"instId": self._wire_inst(category, symbol), "lever": value, "mgnMode": "cross"}
        await self._http.write(
            "/api/v5/account/set-leverage", body, f"set {symbol} leverage to {value}", operation="leverage"
        )


def _change(wanted: Decimal | None, was: Decimal | None) -> Decimal | None:
    """A leg as amend-algos takes it: the new price, 0 to delete it, None to leave it as it is."""
    if wanted == was:
        return None
    return wanted if wanted is not None else Decimal(0)
