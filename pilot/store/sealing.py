"""Seals: HMAC-SHA256 under the journal key, so a row written without the key is told from one written by Pilot.

One key gives three independent sub-keys (HMAC as the key-derivation function, one label each), so a
journal seal can never pass as a plan seal or reveal the key id: entries, plans and the key's public id.
"""

from __future__ import annotations

import hashlib
import hmac

_ENTRY_LABEL = b"pilot/journal/entry-seal/v1"
_PLAN_LABEL = b"pilot/store/plan-seal/v1"
_KEY_ID_LABEL = b"pilot/journal/key-id/v1"


def _subkey(key: bytes, label: bytes) -> bytes:
    return hmac.new(key, label, hashlib.sha256).digest()


class Sealer:
    """Computes and checks seals: one HMAC-SHA256 each, microseconds beside the fsync of an append."""

    __slots__ = ("_entry", "_plan", "key_id")

    def __init__(self, key: bytes) -> None:
        if len(key) < 32:
            raise ValueError("a journal key has at least 32 bytes")
        self._entry = _subkey(key, _ENTRY_LABEL)
        self._plan = _subkey(key, _PLAN_LABEL)
        # Public: names the key in the database and in messages; says nothing about the key itself.
        self.key_id = "k_" + _subkey(key, _KEY_ID_LABEL).hex()[:16]

    def __repr__(self) -> str:
        return f"Sealer({self.key_id})"

    def entry(self, text: str) -> str:
        """The seal of a journal entry's canonical text."""
        return _digest(self._entry, text)

    def plan(self, text: str) -> str:
        """The seal of a plan's canonical text."""
        return _digest(self._plan, text)

    def entry_matches(self, text: str, seal: object) -> bool:
        """Whether `seal` (as read from the database: any type, or None) is this entry's seal."""
        return same_digest(self.entry(text), seal)

    def plan_matches(self, text: str, seal: object) -> bool:
        """Whether `seal` (as read from the database: any type, or None) is this plan's seal."""
        return same_digest(self.plan(text), seal)


def _digest(subkey: bytes, text: str) -> str:
    return hmac.new(subkey, text.encode("utf-8"), hashlib.sha256).hexdigest()


def same_digest(expected: str, found: object) -> bool:
    """Compare in constant time; `found` comes from the database and may be of any type."""
    if not isinstance(found, str):
        return False
    return hmac.compare_digest(expected.encode(), found.encode("utf-8", "surrogatepass"))
