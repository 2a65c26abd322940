"""Symbols the exchange names are exchange text too: one an agent could not write itself is quarantined.

A symbol in capitals and digits, in parts joined by single hyphens (pilot.core.policy.SYMBOL_PATTERN, the only
kind the agent may name) passes as it is. Any other (markup, a newline and "SYSTEM: ...", an option's
name longer than 30 characters) reaches Pilot under a name Pilot gives it, QUARANTINED and ten hex digits of its hash, with the exchange's
text beside it (`UNTRUSTED_KEY`) for answers to show only in `untrusted_text`. The adapter sends the
exchange's own text whenever a request names the quarantined name, so a position on such a symbol can still
be read and closed (never grown: the name is on no policy's allowedMarkets).
"""

from __future__ import annotations

import hashlib
from typing import Any

from pilot.core.policy import SYMBOL_PATTERN

PREFIX = "QUARANTINED"
UNTRUSTED_KEY = "pilotUntrustedSymbol"  # the exchange's text, beside a quarantined row's new name
_DEPTH = 6  # how deep rows sit in an answer (result.list[i], result.list[i].children ...)


def quarantined_name(raw: str) -> str:
    """The name Pilot gives an exchange symbol it will not pass on: stable, and one an agent can write."""
    return PREFIX + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:10].upper()


def is_quarantined_name(symbol: str) -> bool:
    return symbol.startswith(PREFIX) and len(symbol) == len(PREFIX) + 10


class Quarantine:
    """The names given in one adapter's life, and the exchange's text behind each."""

    def __init__(self) -> None:
        self._raw: dict[str, str] = {}
        self._coins: dict[str, str] = {}  # a quarantined linear symbol's settle coin, as a list read said

    def clean(self, answer: Any, depth: int = _DEPTH) -> None:
        """Rename, in place, every `symbol` in an answer that an agent could not write."""
        if depth <= 0:
            return
        if isinstance(answer, dict):
            symbol = answer.get("symbol")
            if isinstance(symbol, str) and symbol and not SYMBOL_PATTERN.fullmatch(symbol):
                name = quarantined_name(symbol)
                self._raw[name] = symbol
                answer["symbol"], answer[UNTRUSTED_KEY] = name, symbol
            for value in answer.values():
                if isinstance(value, dict | list):
                    self.clean(value, depth - 1)
        elif isinstance(answer, list):
            for item in answer:
                self.clean(item, depth - 1)

    def knows(self, symbol: str) -> bool:
        return not is_quarantined_name(symbol) or symbol in self._raw

    def wire(self, symbol: str) -> str:
        """The exchange's own text for a quarantined name it gave (else the symbol as it is)."""
        return self._raw.get(symbol, symbol)

    def note_coin(self, answer: Any, coin: str) -> None:
        """Remember the settle coin of the quarantined rows in a linear list read by settle coin."""
        result = answer.get("result") if isinstance(answer, dict) else None
        for row in result.get("list") or () if isinstance(result, dict) else ():
            if isinstance(row, dict) and UNTRUSTED_KEY in row:
                self._coins[str(row["symbol"])] = coin

    def coin(self, symbol: str) -> str:
        """The settle coin a quarantined linear symbol was listed under (USDT when none was seen)."""
        return self._coins.get(symbol, "USDT")
