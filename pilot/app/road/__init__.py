"""The one road to the exchange: the ports, the gate that holds the only writer, and idempotency keys in front of it."""
