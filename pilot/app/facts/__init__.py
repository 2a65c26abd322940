"""What a judgement sees: facts read from the exchange (streams or REST), the sends not yet settled, and the read-only tools."""
