"""How the paper exchange's state is written in Bybit V5 JSON: field names, string numbers, enums."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from pilot.paper.accounts import ZERO, Accounts, SimPosition
from pilot.paper.engine import SimClosedPnl, SimExecution, SimOrder
from pilot.paper.market import Quote
from pilot.paper.scenario import ApiKeySpec, InstrumentSpec
from pilot.paper.validation import last_price, price_limits


def num(value: Decimal) -> str:
    """A Decimal as Bybit writes it: plain notation, no exponent, no trailing zeros."""
    if value == 0:
        return "0"
    text = format(value.normalize(), "f")
    return text


def step(value: Decimal, size: Decimal) -> str:
    """A Decimal with the decimals of a tick or lot step ("80220.10" for tick 0.10)."""
    exponent = size.as_tuple().exponent
    places = min(exponent, 0) if isinstance(exponent, int) else 0  # "n", "N", "F": not a finite step
    return format(value.quantize(Decimal(1).scaleb(places), rounding=ROUND_HALF_EVEN), "f")


def _decimals(step: Decimal) -> int:
    """How many decimals a tick or lot step has (0.01 -> 2, 5 -> 0)."""
    exponent = step.normalize().as_tuple().exponent
    return max(-exponent, 0) if isinstance(exponent, int) else 0


def order_view(order: SimOrder, instrument: InstrumentSpec) -> dict[str, Any]:
    """An order as /v5/order/realtime and /v5/order/history write it (fields as in Bybit's 2025 answers:
    "" for unset prices and for the average price of an order without fills, cumFeeDetail per coin).

    A conditional or TP/SL order shows its trigger as the recorded ones do (a whole-position trailing stop
    on Bybit's order stream, 2024-09: stopOrderType, triggerPrice, triggerBy, triggerDirection, createType,
    reduceOnly and closeOnTrigger true, price "0" for a Market one, qty the position's size)."""
    tick, lot = instrument.tick_size, instrument.qty_step
    avg = order.cum_exec_value / order.cum_exec_qty if order.cum_exec_qty else ZERO

    def price(value: Decimal, unset: str = "") -> str:
        return step(value, tick) if value else unset

    row = {
        "orderId": order.order_id,
        "orderLinkId": order.order_link_id,
        "parentOrderLinkId": order.parent_order_link_id,
        "blockTradeId": "",
        "symbol": order.symbol,
        "price": price(order.price, "0"),
        "qty": step(order.qty, lot),
        "side": order.side,
        "isLeverage": "0" if order.category == "spot" else "",
        "positionIdx": order.position_idx,
        "orderStatus": order.status,
        "createType": order.create_type,
        "cancelType": order.cancel_type,
        "rejectReason": order.reject_reason,
        "avgPrice": num(avg) if avg else "",
        "leavesQty": step(order.leaves_qty, lot),
        "leavesValue": num(order.leaves_qty * order.price),
        "cumExecQty": step(order.cum_exec_qty, lot),
        "cumExecValue": num(order.cum_exec_value),
        "cumExecFee": num(order.cum_exec_fee),
        "timeInForce": order.time_in_force,
        "orderType": order.order_type,
        "stopOrderType": order.stop_order_type,
        "orderIv": "",
        "marketUnit": "",
        "slippageToleranceType": "UNKNOWN",
        "slippageTolerance": "0",
        "triggerPrice": price(order.trigger_price),
        "takeProfit": price(order.take_profit),
        "stopLoss": price(order.stop_loss),
        "tpslMode": order.tpsl_mode,
        "ocoTriggerBy": "",
        "tpLimitPrice": price(order.tp_limit_price, "0"),
        "slLimitPrice": price(order.sl_limit_price, "0"),
        "tpTriggerBy": order.tp_trigger_by,
        "slTriggerBy": order.sl_trigger_by,
        "triggerDirection": order.trigger_direction,
        "triggerBy": order.trigger_by,
        "lastPriceOnCreated": step(order.last_price_on_created, tick) if order.last_price_on_created else "",
        "basePrice": "",
        "reduceOnly": order.reduce_only,
        "closeOnTrigger": order.close_on_trigger,
        "placeType": "",
        "smpType": order.smp_type,
        "smpGroup": 0,
        "smpOrderId": "",
        "createdTime": str(order.created_ms),
        "updatedTime": str(order.updated_ms),
        "extraFees": "",
        "cumFeeDetail": {order.fee_coin: num(order.cum_exec_fee)} if order.cum_exec_fee else {},
        "rpiTakerAccess": False,
        "rpiMatchedQty": "0",
    }
    if (
        order.category == "spot"
    ):  # open-order.mdx: "Spot does not have this field" (ccxt reads it as a contract's)
        del row["tpslMode"]
    return row


def execution_view(execution: SimExecution, instrument: InstrumentSpec) -> dict[str, Any]:
    order = execution.order
    return {
        "symbol": order.symbol,
        "orderId": order.order_id,
        "orderLinkId": order.order_link_id,
        "side": order.side,
        "orderPrice": step(order.price, instrument.tick_size) if order.price else "0",
        "orderQty": step(execution.order_qty, instrument.qty_step),
        "leavesQty": step(execution.leaves_after, instrument.qty_step),
        "createType": order.create_type,
        "orderType": order.order_type,
        "stopOrderType": order.stop_order_type or "UNKNOWN",
        "execFee": num(execution.fee),
        "execFeeV2": "",
        "execId": execution.exec_id,
        "execPrice": step(execution.price, instrument.tick_size),
        "execQty": step(execution.qty, instrument.qty_step),
        "execType": execution.exec_type,
        "execValue": num(execution.qty * execution.price),
        "execTime": str(execution.time_ms),
        "feeCurrency": execution.fee_coin if order.category == "spot" else "",
        "isMaker": execution.is_maker,
        "feeRate": num(execution.fee_rate),
        "tradeIv": "",
        "markIv": "",
        "markPrice": num(execution.mark),
        "indexPrice": "",
        "underlyingPrice": "",
        "blockTradeId": "",
        "closedSize": step(execution.closed_size, instrument.qty_step),
        "seq": execution.seq,
        "extraFees": "",
    }


def position_view(
    position: SimPosition, instrument: InstrumentSpec, accounts: Accounts, quote: Quote, position_idx: int = 0
) -> dict[str, Any]:
    """A position as /v5/position/list writes it; an empty one has "" where Bybit has no value
    (positionValue, unrealisedPnl, liqPrice, takeProfit, stopLoss), as in Bybit's recorded answers."""
    size = abs(position.size)
    open_ = position.size != 0
    liq = accounts.liq_price(position) if open_ and not position_idx else None
    side = "" if not open_ else ("Buy" if position.size > 0 else "Sell")
    im, mm = accounts.position_im(position), accounts.position_mm(position)
    return {
        "positionIdx": position_idx,
        "riskId": 1,
        "riskLimitValue": "2000000",
        "symbol": position.symbol,
        "side": side,
        "size": step(size, instrument.qty_step) if open_ else "0",  # a flat position's size is "0"
        "avgPrice": num(position.avg_price),
        "positionValue": num(size * position.avg_price) if open_ else "",
        "autoAddMargin": 0,
        "positionStatus": "Normal",
        "leverage": num(position.leverage),
        "breakEvenPrice": num(position.avg_price),
        "markPrice": step(quote.mark, instrument.tick_size),
        "liqPrice": step(liq, instrument.tick_size) if liq is not None else "",
        "positionIM": num(im),
        "positionIMByMp": num(im),
        "positionMM": num(mm),
        "positionMMByMp": num(mm),
        "takeProfit": num(position.take_profit) if position.take_profit else "",
        "stopLoss": num(position.stop_loss) if position.stop_loss else "",
        "trailingStop": num(position.trailing_stop),
        "sessionAvgPrice": "",
        "delta": "",
        "gamma": "",
        "vega": "",
        "theta": "",
        "unrealisedPnl": num(accounts.unrealised_pnl(position)) if open_ else "",
        "curRealisedPnl": num(position.cur_realised_pnl),
        "cumRealisedPnl": num(position.cum_realised_pnl),
        "adlRankIndicator": 2 if open_ else 0,
        "createdTime": str(position.created_ms),
        "updatedTime": str(position.updated_ms),
        "openTime": 0,
        "seq": position.updated_ms,
        "isReduceOnly": False,
        "mmrSysUpdatedTime": "",
        "leverageSysUpdatedTime": "",
        "tpslMode": "Full",
        "bustPrice": "",
        "positionBalance": "",
        "tradeMode": 0,
    }


def instrument_view(instrument: InstrumentSpec, symbol_id: int) -> dict[str, Any]:
    common = {
        "symbol": instrument.symbol,
        "symbolId": symbol_id,
        "status": "Trading",
        "baseCoin": instrument.base_coin,
        "quoteCoin": instrument.quote_coin,
        "symbolType": "",
        "riskParameters": {
            "priceLimitRatioX": num(instrument.price_limit_ratio_x),
            "priceLimitRatioY": num(instrument.price_limit_ratio_y),
        },
    }
    if instrument.category == "spot":
        return common | {
            "innovation": "0",
            "marginTrading": "none",
            "stTag": "",
            "lotSizeFilter": {
                "basePrecision": num(instrument.qty_step),
                "quotePrecision": "0.00000001",
                "minOrderQty": num(instrument.min_order_qty),
                "maxOrderQty": num(instrument.max_order_qty),
                "minOrderAmt": num(instrument.min_notional),
                "maxOrderAmt": "8000000",
                "maxLimitOrderQty": num(instrument.max_order_qty),
                "maxMarketOrderQty": num(instrument.max_order_qty),
                "postOnlyMaxLimitOrderSize": num(instrument.max_order_qty),
            },
            "priceFilter": {"tickSize": num(instrument.tick_size)},
        }
    return common | {
        "contractType": "LinearPerpetual",
        "launchTime": "1585526400000",
        "deliveryTime": "0",
        "deliveryFeeRate": "",
        "priceScale": str(_decimals(instrument.tick_size)),
        "leverageFilter": {
            "minLeverage": "1",
            "maxLeverage": step(instrument.max_leverage, Decimal("0.01")),
            "leverageStep": "0.01",
        },
        "priceFilter": {
            "minPrice": num(instrument.tick_size),
            "maxPrice": "1999999.80",
            "tickSize": num(instrument.tick_size),
        },
        "lotSizeFilter": {
            "maxOrderQty": num(instrument.max_order_qty),
            "minOrderQty": num(instrument.min_order_qty),
            "qtyStep": num(instrument.qty_step),
            "postOnlyMaxOrderQty": num(instrument.max_order_qty),
            "maxMktOrderQty": num(instrument.max_order_qty),
            "minNotionalValue": num(instrument.min_notional),
        },
        "unifiedMarginTrade": True,
        "fundingInterval": instrument.funding_interval_min,
        "settleCoin": instrument.quote_coin,
        "copyTrading": "both",
        "upperFundingRate": "0.00375",
        "lowerFundingRate": "-0.00375",
        "displayName": "",
        "forbidUplWithdrawal": False,
        "isPreListing": False,
        "preListingInfo": None,
    }


def ticker_view(
    instrument: InstrumentSpec,
    quote: Quote,
    book_size: Decimal,
    funding: tuple[Decimal, int, int] = (Decimal(0), 0, 8),  # linear: rate, next funding ms, interval hours
) -> dict[str, Any]:
    tick = instrument.tick_size
    last = step(last_price(quote, instrument), tick)
    common = {
        "symbol": instrument.symbol,
        "bid1Price": step(quote.bid, tick),
        "bid1Size": num(book_size),
        "ask1Price": step(quote.ask, tick),
        "ask1Size": num(book_size),
        "lastPrice": last,
        "prevPrice24h": last,
        "price24hPcnt": "0",
        "highPrice24h": last,
        "lowPrice24h": last,
        "turnover24h": "0",
        "volume24h": "0",
    }
    if instrument.category == "spot":
        return common | {"usdIndexPrice": last}
    return common | {
        "indexPrice": step(quote.mark, tick),
        "markPrice": step(quote.mark, tick),
        "prevPrice1h": last,
        "openInterest": "0",
        "openInterestValue": "0",
        "singleOpenInterest": "0",
        "singleOpenInterestValue": "0",
        "fundingRate": num(funding[0]),
        "nextFundingTime": str(funding[1]),
        "predictedDeliveryPrice": "",
        "basisRate": "",
        "basis": "",
        "deliveryFeeRate": "",
        "deliveryTime": "0",
        "preOpenPrice": "",
        "preQty": "",
        "curPreListingPhase": "",
        "fundingIntervalHour": str(funding[2]),
        "fundingCap": "0.005",
        "basisRateYear": "",
    }


def price_limit_view(instrument: InstrumentSpec, quote: Quote, now_ms: int) -> dict[str, Any]:
    buy, sell = price_limits(instrument, quote)
    return {
        "symbol": instrument.symbol,
        "buyLmt": step(buy, instrument.tick_size),
        "sellLmt": step(sell, instrument.tick_size),
        "ts": str(now_ms),
    }


def api_key_view(spec: ApiKeySpec, index: int) -> dict[str, Any]:
    permissions: dict[str, list[str]] = {
        group: []
        for group in (
            "ContractTrade",
            "Spot",
            "Wallet",
            "Options",
            "Derivatives",
            "CopyTrading",
            "BlockTrade",
            "Exchange",
            "NFT",
            "Affiliate",
            "Earn",
        )
    }
    permissions |= {group: list(names) for group, names in spec.permissions.items()}
    return {
        "id": str(1000 + index),
        "note": "paper",
        "apiKey": spec.key,
        "readOnly": 1 if spec.read_only else 0,
        "secret": "",
        "permissions": permissions,
        "ips": list(spec.ips),
        "type": 1,
        "deadlineDay": -2,
        "expiredAt": spec.expired_at,
        "createdAt": "2026-01-01T00:00:00Z",
        "unified": 0,
        "uta": 1,
        "userID": 100001,
        "inviterID": 0,
        "vipLevel": "No VIP",
        "mktMakerLevel": "0",
        "affiliateID": 0,
        "rsaPublicKey": "",
        "isMaster": spec.is_master,
        "parentUid": "0",
        "kycLevel": "LEVEL_DEFAULT",
        "kycRegion": "",
        "userIDInt64": "0",  # as apikey-info.mdx's example writes them beside the integer ids
        "inviterIDInt64": "0",
        "affiliateIDInt64": "0",
    }


def closed_pnl_view(row: SimClosedPnl, instrument: InstrumentSpec) -> dict[str, Any]:
    """A /v5/position/closed-pnl row as Bybit writes one (closed-pnl.mdx; hirokisan/bybit's recording)."""
    tick, lot = instrument.tick_size, instrument.qty_step
    return {
        "symbol": row.symbol,
        "orderId": row.order_id,
        "side": row.side,
        "qty": step(row.qty, lot),
        "orderPrice": step(row.order_price, tick) if row.order_price else "0",
        "orderType": row.order_type,
        "execType": row.exec_type,
        "closedSize": step(row.closed_size, lot),
        "cumEntryValue": num(row.avg_entry_price * row.closed_size),
        "avgEntryPrice": num(row.avg_entry_price),
        "cumExitValue": num(row.avg_exit_price * row.closed_size),
        "avgExitPrice": num(row.avg_exit_price),
        "closedPnl": num(row.closed_pnl),
        "fillCount": str(row.fill_count),
        "leverage": num(row.leverage),
        "createdTime": str(row.created_ms),
        "updatedTime": str(row.updated_ms),
    }
