"""The exchange environments a key can belong to; no live (mainnet) environment is one of them yet.

Each names its venue (bound into a stored key's ciphertext) and what a key for it is made of: Bybit's and
the paper exchange's are a key and a secret, OKX's a key, a secret and the passphrase chosen when the key
was created (a third secret, stored sealed with the other two and never shown).

Live trading comes with its own opt-in (a human's, per home): OKX's live environment ("okx-live", the same
API without the demo header) and Bybit's mainnet are declared here only once that opt-in exists; until then
`pilot keys add` cannot name them, and the adapters refuse their addresses.
"""

from __future__ import annotations

from enum import StrEnum


class Environment(StrEnum):
    BYBIT_DEMO = "bybit-demo"
    BYBIT_TESTNET = "bybit-testnet"
    OKX_DEMO = "okx-demo"  # OKX demo trading: OKX's live API with the `x-simulated-trading: 1` header
    PAPER = "paper"  # Pilot's own simulator on loopback: rehearsal and tests

    @property
    def exchange(self) -> str:
        """The venue, as bound into the ciphertext's associated data."""
        return _VENUES[self]

    @property
    def needs_url(self) -> bool:
        return self is Environment.PAPER

    @property
    def needs_passphrase(self) -> bool:
        """Whether a key for it has a third secret, the passphrase (OKX's)."""
        return self.exchange == "okx"

    @property
    def venue_name(self) -> str:
        """The venue as a human reads it (where the key was created)."""
        return {"bybit": "Bybit", "okx": "OKX", "paper": "the paper exchange"}[self.exchange]


_VENUES = {
    Environment.BYBIT_DEMO: "bybit",
    Environment.BYBIT_TESTNET: "bybit",
    Environment.OKX_DEMO: "okx",
    Environment.PAPER: "paper",
}
