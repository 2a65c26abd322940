"""Pilot: a plan-then-execute guardrail between AI agents and a Bybit V5 exchange."""
