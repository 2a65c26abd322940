"""The running Pilot's base: its Runtime and home, the policy file read fresh, and what the journal says every judgement needs (the ledger, the loss latch)."""
