"""The order use cases: plan, place, amend, close, cancel, leverage, and the stops around a position."""
