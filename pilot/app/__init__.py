"""Use cases: plan, place, cancel, close, kill switch, confirm; they orchestrate the ports."""
