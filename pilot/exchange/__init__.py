"""Exchange access: the one Bybit adapter and the paper exchange it can talk to."""
