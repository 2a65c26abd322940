"""Use cases, by concern: orders, facts, human, road (the gate), answers, runtime; they orchestrate the ports."""
