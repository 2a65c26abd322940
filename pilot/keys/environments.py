"""The exchange environments a key can belong to; mainnet is deliberately not one of them."""

from __future__ import annotations

from enum import StrEnum


class Environment(StrEnum):
    BYBIT_DEMO = "bybit-demo"
    BYBIT_TESTNET = "bybit-testnet"
    PAPER = "paper"  # Pilot's own simulator on loopback: rehearsal and tests

    @property
    def exchange(self) -> str:
        """The venue, as bound into the ciphertext's associated data."""
        return "paper" if self is Environment.PAPER else "bybit"

    @property
    def needs_url(self) -> bool:
        return self is Environment.PAPER
