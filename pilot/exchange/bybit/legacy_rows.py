"""Bybit's names for an order request's fields, as journal rows written before the venue port spoke Pilot's
words carry them (orderLinkId, orderType, ...): the map that reads those rows in Pilot's own keys. The journal
is insert-only and sealed, so such rows stay as written; pilot.app.answers.sent_requests reads every row
through this map, reached by pilot.exchange.adapters."""

from __future__ import annotations

LEGACY_REQUEST_KEYS = {
    "orderType": "order_type",
    "timeInForce": "time_in_force",
    "orderLinkId": "order_link_id",
    "reduceOnly": "reduce_only",
    "stopLoss": "stop_loss",
    "takeProfit": "take_profit",
    "smpType": "smp_type",
}
