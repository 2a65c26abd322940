"""The exchange environments a key can belong to. `bybit` is mainnet: real money, a live home's only one.

Each names its venue (bound into a stored key's ciphertext) and what a key for it is made of: Bybit's and
the paper exchange's are a key and a secret, OKX's a key, a secret and the passphrase chosen when the key
was created (a third secret, stored sealed with the other two and never shown).

Live trading comes with its own opt-in (a human's, per home, `pilot live on`): Bybit's mainnet (`bybit`) is
declared, open to a live home only. OKX's live environment ("okx-live", the same API without the demo header)
is not yet: `pilot keys add` cannot name it, and the adapters refuse its addresses.
"""

from __future__ import annotations

from enum import StrEnum


class Environment(StrEnum):
    BYBIT_DEMO = "bybit-demo"
    BYBIT_TESTNET = "bybit-testnet"
    BYBIT = "bybit"  # mainnet, on a host Bybit lists (pilot.exchange.bybit.urls): a live home only
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
    def needs_host(self) -> bool:
        """Whether a key names its host: mainnet's, chosen among Bybit's listed hosts."""
        return self is Environment.BYBIT

    @property
    def live(self) -> bool:
        """Real money: held to the live key rules and open to a live home only."""
        return self is Environment.BYBIT

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
    Environment.BYBIT: "bybit",
    Environment.OKX_DEMO: "okx",
    Environment.PAPER: "paper",
}
