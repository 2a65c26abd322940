"""OKX's markets in Pilot's words: which instrument a (category, symbol) is, sizes in coins, and client order
ids in OKX's alphabet.

**Symbols.** Pilot names a market by category and symbol, as Bybit does (BTCUSDT is both a spot pair and a
perpetual). OKX names its instruments apart: the spot pair BTC-USDT and the USDT-margined perpetual
BTC-USDT-SWAP, whose instrument family is BTC-USDT. So a policy names an OKX market by OKX's own BASE-QUOTE
(`BTC-USDT`), and the category says which instrument: spot is the pair BTC-USDT, linear the perpetual
BTC-USDT-SWAP. Only linear (USDT- or USDC-margined) perpetuals are Pilot's linear markets: inverse swaps
(BTC-USD-SWAP, margined in the coin), dated futures and options are no market of Pilot's, and their rows
are left out of every list, as Bybit's inverse and option categories are never read. An instrument id of
no known form is exchange text no agent could write: it is left out too, never shown.

**Contracts.** OKX sizes a perpetual in contracts of `ctVal` coins each (BTC-USDT-SWAP: 0.01 BTC); Pilot's
core speaks coins. The adapter presents every size in coins (instrument steps and limits, books, positions,
orders, fills: contracts × ctVal, exact in Decimal) and converts back on the wire: coins ÷ ctVal, which is
exact for every quantity the core floors to the instrument's step (lotSz × ctVal). A quantity that would
not be a whole number of lots is refused before anything is sent (`to_contracts`). Spot sizes are coins.

**Client order ids.** Pilot derives a client order id from each plan ("pilot-" and 30 hex digits, 36
characters: pilot.app.road.gate.order_link_id); OKX takes 1 to 32 letters and digits. The adapter writes
Pilot's ids in OKX's alphabet, reversibly: "pilot" and the same 120 bits in 21 base-62 digits (26
characters), and reads them back the same way. Any other id that already fits OKX's alphabet passes as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

CATEGORIES = {"linear": "SWAP", "spot": "SPOT"}
SWAP_SUFFIX = "-SWAP"
PAIR = re.compile(r"[A-Z0-9]{1,15}-[A-Z0-9]{1,15}")  # BASE-QUOTE: an OKX spot pair, a perpetual's family
SWAP = re.compile(r"([A-Z0-9]{1,15}-[A-Z0-9]{1,15})-SWAP")
LINEAR_SETTLE = ("USDT", "USDC")  # the perpetuals margined in these are Pilot's linear markets


def inst_id(category: str, symbol: str) -> str | None:
    """OKX's instrument id for Pilot's (category, symbol); None when the symbol names no OKX market there."""
    if category not in CATEGORIES or not PAIR.fullmatch(symbol):
        return None
    return symbol + SWAP_SUFFIX if category == "linear" else symbol


def inst_type(category: str) -> str:
    return CATEGORIES[category]


def spelled(symbol: str) -> str:
    """OKX's spelling of a market Pilot's defaults name as Bybit does (BTCUSDT: BTC-USDT), for `pilot init`."""
    quote = next((q for q in LINEAR_SETTLE if symbol.endswith(q) and len(symbol) > len(q)), None)
    return f"{symbol[: -len(quote)]}-{quote}" if quote else symbol


@dataclass(frozen=True, slots=True)
class Named:
    """An OKX instrument as Pilot names it."""

    category: str
    symbol: str


def named(inst_type_: str, inst: str) -> Named | None:
    """Pilot's name for an instrument OKX reports (a row's instType and instId); None for one that is none
    of Pilot's markets (an inverse or dated contract, an option, an id of no known form: left out)."""
    swap = SWAP.fullmatch(inst)
    if inst_type_ == "SWAP" and swap is not None and swap.group(1).rsplit("-", 1)[1] in LINEAR_SETTLE:
        return Named("linear", swap.group(1))
    if inst_type_ == "SPOT" and PAIR.fullmatch(inst):
        return Named("spot", inst)
    return None


@dataclass(frozen=True, slots=True)
class Contract:
    """How many coins one unit of an instrument's size is: ctVal for a perpetual, 1 for spot."""

    value: Decimal = Decimal(1)

    def coins(self, size: Decimal) -> Decimal:
        """A size in OKX's units (contracts, or coins on spot) as coins: exact."""
        return size * self.value

    def to_contracts(self, qty: Decimal) -> Decimal:
        """Coins as OKX's units, exactly; ValueError when they are no whole multiple of one contract's
        smallest part that Decimal can hold (never rounded: the amount sent is the amount judged)."""
        contracts = qty / self.value
        if self.coins(contracts) != qty:
            raise ValueError(f"{qty} coins are not a whole number of contracts of {self.value}")
        return contracts


SPOT_UNIT = Contract()

# ---- client order ids ----------------------------------------------------------------------------------
PILOT_PREFIX, PILOT_HEX = "pilot-", 30  # pilot.app.road.gate.order_link_id
WIRE_PREFIX, WIRE_DIGITS = "pilot", 21  # 62**21 > 16**30
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_PILOT_ID = re.compile(rf"{PILOT_PREFIX}[0-9a-f]{{{PILOT_HEX}}}")
_WIRE_ID = re.compile(rf"{WIRE_PREFIX}[0-9A-Za-z]{{{WIRE_DIGITS}}}")
OKX_ID = re.compile(r"[0-9A-Za-z]{1,32}")


def wire_client_id(link_id: str) -> str:
    """The clOrdId OKX is sent for Pilot's client order id.

    Raises:
        ValueError: an id that is neither Pilot's nor already in OKX's alphabet (nothing is sent).
    """
    if _PILOT_ID.fullmatch(link_id):
        number = int(link_id[len(PILOT_PREFIX) :], 16)
        digits = []
        for _ in range(WIRE_DIGITS):
            number, digit = divmod(number, 62)
            digits.append(_ALPHABET[digit])
        return WIRE_PREFIX + "".join(reversed(digits))
    if OKX_ID.fullmatch(link_id) and not _WIRE_ID.fullmatch(link_id):
        return link_id
    raise ValueError(f"client order id {link_id!r} cannot be written in OKX's alphabet")


def pilot_client_id(cl_ord_id: str) -> str:
    """Pilot's client order id for a clOrdId OKX reports (the inverse of wire_client_id)."""
    if not _WIRE_ID.fullmatch(cl_ord_id):
        return cl_ord_id
    number = 0
    for character in cl_ord_id[len(WIRE_PREFIX) :]:
        number = number * 62 + _ALPHABET.index(character)
    if number >= 16**PILOT_HEX:
        return cl_ord_id
    return PILOT_PREFIX + f"{number:0{PILOT_HEX}x}"
