"""The exchange environments a key can belong to. `bybit` is mainnet: real money, a live home's only one."""

from __future__ import annotations

from enum import StrEnum


class Environment(StrEnum):
    BYBIT_DEMO = "bybit-demo"
    BYBIT_TESTNET = "bybit-testnet"
    BYBIT = "bybit"  # mainnet, on a host Bybit lists (pilot.exchange.bybit.urls): a live home only
    PAPER = "paper"  # Pilot's own simulator on loopback: rehearsal and tests

    @property
    def exchange(self) -> str:
        """The venue, as bound into the ciphertext's associated data."""
        return "paper" if self is Environment.PAPER else "bybit"

    @property
    def needs_url(self) -> bool:
        return self is Environment.PAPER

    @property
    def needs_host(self) -> bool:
        """Whether a key names its host: mainnet's, chosen among Bybit's listed hosts."""
        return self is Environment.BYBIT

    @property
    def live(self) -> bool:
        """Real money: held to the live key rules and open to a live home only."""
        return self is Environment.BYBIT
