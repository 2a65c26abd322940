"""What an order.sent entry says was sent, in Pilot's own keys, from rows of every version: the one legacy reader.

Pilot journals the request it sends as `OrderRequest.as_record()` gives it (order_link_id, order_type,
time_in_force, reduce_only, ...). Rows written before the venue port spoke Pilot's words carry Bybit's keys
for the same fields (orderLinkId, orderType, ...). The journal is insert-only and sealed, so those rows stay as
written: everything that reads a sent request (the ledger, activity, receipts, the CLI, the console) reads it
through `sent_request`, the one place that reads the old keys (their map lives with the venue that named
them: pilot.exchange.bybit.legacy_rows).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pilot.exchange.adapters import LEGACY_REQUEST_KEYS


def sent_request(request: object) -> dict[str, Any]:
    """`request` as a journal row records it (an order.sent entry's `request`, or an order a row carries), in
    Pilot's keys whichever version wrote it; {} when it is not a mapping."""
    if not isinstance(request, Mapping):
        return {}
    return {LEGACY_REQUEST_KEYS.get(str(key), str(key)): value for key, value in request.items()}
