"""Bybit's writes behind the venue port: create, cancel, amend, cancel-all, the trading stop, leverage.

Each is sent once (pilot.exchange.bybit.transport). "Not modified" is success: an unchanged leverage (110043)
and an unchanged trading stop (34040); the trading stop says which (`set_trading_stop` returns False when
nothing changed).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from pilot.exchange.bybit import payloads as wire_
from pilot.exchange.bybit import ret_codes as codes
from pilot.exchange.bybit.ret_codes import Verdict
from pilot.exchange.bybit.transport import SETTLE_COIN, Transport
from pilot.exchange.errors import ExchangeRejected
from pilot.exchange.listings import Listings
from pilot.exchange.models import OrderAck, OrderRequest

# A spot order waiting for its trigger, by its stopOrderType: the orderFilter that finds it (cancel-order.mdx).
SPOT_FILTERS = {"tpslOrder": "tpslOrder", "Stop": "StopOrder"}


class OrderWrites:
    """The writes of BybitExchange (pilot.exchange.bybit.adapter)."""

    _http: Transport
    listings: Listings

    @contextlib.contextmanager
    def _rules_checked(self, category: str, symbol: str) -> Iterator[None]:
        """An order refused for its parameters: the market's rules are read again before the next judgement."""
        try:
            yield
        except ExchangeRejected as refused:
            if refused.family == "params":
                self.listings.refused_for_parameters(category, symbol)
            raise

    async def create_order(self, request: OrderRequest) -> OrderAck:
        """Send one create request, exactly once.

        An acknowledgement (OrderAck) means accepted, not yet visible: see find_order.

        Raises:
            ExchangeRejected: a definite no (nothing executed).
            OutcomeUnknown: it may have been executed (look it up by client order id; never resend);
                DuplicateOrderLinkId when the exchange says the client order id is already taken.
            ExchangeUnavailable: not processed (connection refused, HTTP 4xx such as the 403 IP ban).
        """
        action = f"create order {request.order_link_id}"
        with self._rules_checked(request.category, request.symbol):
            answer = await self._http.call(
                "place_order",
                action,
                operation="create",
                link_id=request.order_link_id,
                **wire_.order_params(request),
            )

        def parse(a: dict[str, Any]) -> OrderAck:
            return OrderAck(order_id=a["result"]["orderId"], order_link_id=a["result"]["orderLinkId"])

        return self._http.parse(answer, parse, action, operation="create")

    async def cancel_order(
        self,
        category: str,
        symbol: str,
        *,
        order_id: str | None = None,
        order_link_id: str | None = None,
        waiting_kind: str = "",
    ) -> str:
        """Cancel one order by exchange id or client id; return the exchange's order id. A spot order waiting
        for its trigger is found only under its orderFilter (cancel-order.mdx: Order when none is sent):
        `waiting_kind` is its stopOrderType (tpslOrder, Stop)."""
        if not order_id and not order_link_id:
            raise ValueError("cancel_order needs order_id or order_link_id")
        action = f"cancel order {order_id or order_link_id}"
        where = {"orderFilter": SPOT_FILTERS[waiting_kind]} if category == "spot" and waiting_kind else {}
        answer = await self._http.call(
            "cancel_order",
            action,
            operation="cancel",
            category=category,
            symbol=symbol,
            orderId=order_id,
            orderLinkId=order_link_id,
            **where,
        )
        return self._http.parse(answer, lambda a: str(a["result"]["orderId"]), action, operation="cancel")

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
        """Amend one open order's quantity and/or price (/v5/order/amend); return the exchange's order id."""
        if not order_id and not order_link_id:
            raise ValueError("amend_order needs order_id or order_link_id")
        action = f"amend order {order_id or order_link_id}"
        params: dict[str, Any] = {"category": category, "symbol": symbol}
        if order_id:
            params["orderId"] = order_id
        if order_link_id:
            params["orderLinkId"] = order_link_id
        if qty is not None:
            params["qty"] = wire_.wire(qty)
        if price is not None:
            params["price"] = wire_.wire(price)
        with self._rules_checked(category, symbol):
            answer = await self._http.call("amend_order", action, operation="amend", **params)
        return self._http.parse(answer, lambda a: str(a["result"]["orderId"]), action, operation="amend")

    async def cancel_all_orders(
        self, category: str, symbol: str | None = None, *, include_stops: bool = False
    ) -> list[str]:
        """Cancel the open orders of a category (or of one symbol): /v5/order/cancel-all. The order ids.

        Without orderFilter Bybit cancels every kind on linear: the position's TP/SL and trailing stop and
        the conditional orders too (cancel-all.mdx). So the ordinary orders alone (`include_stops` False)
        are asked for with orderFilter "Order"; every kind, with none. Spot cancels its ordinary orders
        unless an orderFilter names tpslOrder or StopOrder: with `include_stops`, one request for each.
        """
        action = f"cancel all {category} orders" + (f" on {symbol}" if symbol else "")
        where = {"symbol": symbol} if symbol else ({"settleCoin": SETTLE_COIN} if category != "spot" else {})
        if not include_stops:
            where["orderFilter"] = "Order"
        if category == "spot" and include_stops:
            # Spot cancels one kind per request (Order by default): the ordinary orders, then the TP/SL
            # orders, then the conditional ones. Each is sent once; a refusal stops the rest.
            ids: list[str] = []
            for kind in ("Order", *SPOT_FILTERS.values()):
                ids += await self._cancel_all_once(action, category, {**where, "orderFilter": kind})
            return ids
        return await self._cancel_all_once(action, category, where)

    async def _cancel_all_once(self, action: str, category: str, where: dict[str, Any]) -> list[str]:
        answer = await self._http.call(
            "cancel_all_orders", action, operation="cancel", category=category, **where
        )
        return self._http.parse(
            answer,
            lambda a: [str(row["orderId"]) for row in a["result"].get("list") or []],
            action,
            operation="cancel",
        )

    async def set_trading_stop(
        self, category: str, symbol: str, *, stop_loss: Decimal | None, take_profit: Decimal | None
    ) -> bool:
        """Set (or with 0, remove) the position's stop-loss and take-profit: /v5/position/trading-stop,
        tpslMode Full (the whole position, closed at market when triggered).

        Returns False when the exchange answers that nothing was modified (34040): the stop-loss and
        take-profit already are the asked values. That is no refusal.
        """
        action = f"set the {symbol} trading stop"
        params: dict[str, Any] = {
            "category": category,
            "symbol": symbol,
            "tpslMode": "Full",
            "positionIdx": 0,
        }
        if stop_loss is not None:
            params["stopLoss"] = wire_.wire(stop_loss)
        if take_profit is not None:
            params["takeProfit"] = wire_.wire(take_profit)
        try:
            await self._http.call("set_trading_stop", action, operation="stop", **params)
        except ExchangeRejected as refusal:
            if codes.verdict(refusal.ret_code, "stop") is not Verdict.UNCHANGED:
                raise
            return False
        return True

    async def set_leverage(self, category: str, symbol: str, leverage: Decimal) -> None:
        """Set one-way leverage; an unchanged leverage (retCode 110043) is success."""
        value = wire_.wire(leverage)
        try:
            await self._http.call(
                "set_leverage",
                f"set {symbol} leverage to {value}",
                operation="leverage",
                category=category,
                symbol=symbol,
                buyLeverage=value,
                sellLeverage=value,
            )
        except ExchangeRejected as refusal:
            if codes.verdict(refusal.ret_code, "leverage") is not Verdict.UNCHANGED:
                raise

    async def set_dcp(self, product: str, window_seconds: int) -> None:
        """Set Bybit's Disconnect Cancel All for `product` (DERIVATIVES or SPOT): every order of it is
        cancelled `window_seconds` (3-300) after the last private connection subscribed to `dcp` drops."""
        await self._http.call(
            "set_dcp",
            f"set Disconnect Cancel All for {product} to {window_seconds} s",
            operation="leverage",  # a setting: sent once, and read back (dcp_windows) rather than trusted
            product=product,
            timeWindow=window_seconds,
        )


# Signed list reads that take a symbol: a quarantined one is not sent (its text, quoted in the URL, would not
