"""The exchange environments a key can belong to. `bybit` and `okx` are mainnet: real money, a live home's.

Each names its venue (bound into a stored key's ciphertext) and what a key for it is made of: Bybit's and
the paper exchange's are a key and a secret, OKX's a key, a secret and the passphrase chosen when the key
was created (a third secret, stored sealed with the other two and never shown).

Live trading comes with its own opt-in (a human's, per home, `pilot live on`): Bybit's mainnet (`bybit`) and
OKX's real account (`okx`: the same API as okx-demo without the demo header) are each open to a live home of
that venue only, on a host the human names among the venue's own (pilot.exchange.adapters.live_url).
"""

from __future__ import annotations

from enum import StrEnum


class Environment(StrEnum):
    BYBIT_DEMO = "bybit-demo"
    BYBIT_TESTNET = "bybit-testnet"
    BYBIT = "bybit"  # mainnet, on a host Bybit lists (pilot.exchange.bybit.urls): a live home only
    OKX_DEMO = "okx-demo"  # OKX demo trading: OKX's live API with the `x-simulated-trading: 1` header
    OKX = "okx"  # OKX's real account, on a host OKX lists (pilot.exchange.okx.urls): a live home only
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
        """Whether a key names its host: mainnet's, chosen among the venue's listed hosts."""
        return self.live

    @property
    def live(self) -> bool:
        """Real money: held to the live key rules and open to a live home only."""
        return self in (Environment.BYBIT, Environment.OKX)

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
    Environment.OKX: "okx",
    Environment.PAPER: "paper",
}
