"""What a judgement sees: facts read from the exchange (streams or REST) and from the journal's ledger, and the read-only tools."""
