"""The order use cases: plan, place, amend, close, cancel, leverage, the stops around a position, and idempotency keys in front of them."""
