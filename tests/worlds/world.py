"""A world: what the paper exchange starts from (instruments, quotes and how they move, positions, balances,
resting orders) and the policy.json a human wrote for it. Plain data, shared by the strategies, the oracle and
the harness.

Numbers are Decimals throughout. Quotes sit on every tick of their symbol, so what the paper exchange serves
(rounded to the tick) is exactly what the world says. A symbol with a `Walk` follows a seeded random walk
(SCENARIOS.md, `prices.S.walk`) that steps every STEP_MS of exchange time; the exchange stands still (speed 0)
until the harness advances it, so the same world and the same advances give the same prices. A walk's quote
is an even number of ticks wide, so its mark (the mid) is on the tick too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

QUOTE_COIN = "USDT"
PAPER_KEY = "worldsPaperKey000001"
PAPER_SECRET = "worldsPaperSecret00000000000000000001"
STEP_MS = 1000  # exchange time between two steps of a walk


def plain(value: Decimal | int) -> str:
    """A decimal as Bybit and Pilot write it: no exponent, no trailing zeros."""
    if isinstance(value, int):
        return str(value)
    text = format(value.normalize(), "f")
    return "0" if text == "-0" else text


@dataclass(frozen=True, slots=True)
class Instrument:
    """One instrument with Bybit's filters (instruments-info), as the scenario gives it."""

    symbol: str
    category: str  # "linear" | "spot"
    tick: Decimal
    step: Decimal
    min_qty: Decimal
    max_qty: Decimal
    min_notional: Decimal
    max_leverage: Decimal = Decimal(100)
    mmr: Decimal = Decimal("0.005")
    band_x: Decimal = Decimal("0.05")
    band_y: Decimal = Decimal("0.05")

    @property
    def base(self) -> str:
        return self.symbol.removesuffix(QUOTE_COIN).removesuffix("-")  # BTCUSDT, or OKX's BTC-USDT

    @property
    def quote(self) -> str:
        return QUOTE_COIN

    @property
    def spot(self) -> bool:
        return self.category == "spot"

    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "symbol": self.symbol,
            "category": self.category,
            "tickSize": plain(self.tick),
            "qtyStep": plain(self.step),
            "maxOrderQty": plain(self.max_qty),
            "minNotionalValue": plain(self.min_notional),
            "priceLimitRatioX": plain(self.band_x),
            "priceLimitRatioY": plain(self.band_y),
            "baseCoin": self.base,
            "quoteCoin": self.quote,
        }
        if self.spot:
            # Bybit deprecated spot minOrderQty: the paper exchange serves it (default: the step), never checks it
            return spec
        return spec | {
            "minOrderQty": plain(self.min_qty),
            "maxLeverage": plain(self.max_leverage),
            "maintenanceMarginRate": plain(self.mmr),
        }


@dataclass(frozen=True, slots=True)
class Quote:
    bid: Decimal
    ask: Decimal
    mark: Decimal

    @property
    def mid(self) -> Decimal:
        return (self.bid + self.ask) / 2


@dataclass(frozen=True, slots=True)
class Walk:
    """How a symbol's price moves: each step multiplies the mid by exp(N(0, volatility_pct %)), drawn from
    `seed`, around which the quote is `spread_ticks` wide (even)."""

    volatility_pct: Decimal
    seed: int
    spread_ticks: int

    def spec(self, start: Decimal) -> dict[str, Any]:
        return {
            "walk": {
                "start": plain(start),
                "volatilityPct": plain(self.volatility_pct),
                "seed": self.seed,
                "spreadTicks": self.spread_ticks,
                "stepMs": STEP_MS,
            }
        }


@dataclass(frozen=True, slots=True)
class Holding:
    """A linear one-way position at the start (Bybit's position/list names)."""

    symbol: str
    side: str  # "Buy" | "Sell"
    size: Decimal
    avg_price: Decimal
    leverage: Decimal
    stop_loss: Decimal | None = None  # the position's whole stop at the start (tpslMode Full)

    @property
    def signed(self) -> Decimal:
        return self.size if self.side == "Buy" else -self.size


@dataclass(frozen=True, slots=True)
class Resting:
    """A GTC limit order another client left on the account before Pilot started (seeded through the API)."""

    category: str
    symbol: str
    side: str  # "Buy" | "Sell"
    qty: Decimal
    price: Decimal
    reduce_only: bool = False
    stop_loss: Decimal | None = None  # sent with it: the position's whole stop once it fills
    trigger: Decimal | None = None  # spot: a TP/SL order (orderFilter tpslOrder) waiting for this price


@dataclass(frozen=True, slots=True)
class World:
    instruments: tuple[Instrument, ...]
    quotes: Mapping[str, Quote]
    policy: Mapping[str, Any]  # policy.json as the human wrote it (numbers as Decimals)
    positions: tuple[Holding, ...] = ()
    balances: Mapping[str, Decimal] = field(default_factory=dict)
    resting: tuple[Resting, ...] = ()
    taker_fee: Decimal = Decimal("0.00055")
    walks: Mapping[str, Walk] = field(default_factory=dict)  # symbols whose price moves; the rest stand still
    # The venue Pilot reaches the world through: "bybit" (the paper exchange's own wire, markets BTCUSDT) or
    # "okx" (the OKX front over it, tests/okx_front: markets BTC-USDT, a stop sent with an order covering
    # what filled, pilot.core.venues.OKX).
    venue: str = "bybit"

    @property
    def order_stop(self) -> str:
        """What a stop sent with an order becomes on the world's venue: the position's, or the order's own."""
        return "order" if self.venue == "okx" else "position"

    def instrument(self, category: str, symbol: str) -> Instrument | None:
        return next((i for i in self.instruments if i.category == category and i.symbol == symbol), None)

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(i.symbol for i in self.instruments))

    def scenario(self) -> dict[str, Any]:
        """The paper exchange's scenario (SCENARIOS.md): walks or static quotes, standing still until advanced,
        no faults, no rate limits."""
        return {
            "description": "a random world of tests/worlds",
            "speed": "0",
            "instruments": [i.spec() for i in self.instruments],
            "prices": {symbol: self._price(symbol, q) for symbol, q in self.quotes.items()},
            "positions": [
                {
                    "symbol": h.symbol,
                    "side": h.side,
                    "size": plain(h.size),
                    "avgPrice": plain(h.avg_price),
                    "leverage": plain(h.leverage),
                }
                | ({"stopLoss": plain(h.stop_loss)} if h.stop_loss is not None else {})
                for h in self.positions
            ],
            "balances": {coin: plain(amount) for coin, amount in self.balances.items()},
            "apiKeys": [
                {
                    "key": PAPER_KEY,
                    "secret": PAPER_SECRET,
                    "readOnly": False,
                    "permissions": {"ContractTrade": ["Order", "Position"], "Spot": ["SpotTrade"]},
                }
            ],
            "fees": {"taker": plain(self.taker_fee), "maker": "0.0002"},
            "rateLimits": False,
        }

    def _price(self, symbol: str, quote: Quote) -> dict[str, Any]:
        walk = self.walks.get(symbol)
        if walk is not None:
            return walk.spec(quote.mid)
        return {"bid": plain(quote.bid), "ask": plain(quote.ask), "mark": plain(quote.mark)}

    def policy_text(self) -> str:
        """policy.json with every amount a plain JSON number (exactly the Decimal given)."""
        return json.dumps(_numbers(self.policy), indent=2)

    def describe(self) -> dict[str, Any]:
        """The world as JSON-ready data, for a finding's reproduction."""
        return {"scenario": self.scenario(), "resting": [_resting(r) for r in self.resting]} | {
            "policy": json.loads(self.policy_text())
        }


def _resting(order: Resting) -> dict[str, Any]:
    return {
        "category": order.category,
        "symbol": order.symbol,
        "side": order.side,
        "qty": plain(order.qty),
        "price": plain(order.price),
        "reduceOnly": order.reduce_only,
    } | ({"stopLoss": plain(order.stop_loss)} if order.stop_loss is not None else {})


def _numbers(value: Any) -> Any:
    """Decimals as floats that print back as the same decimal (checked), so json writes a plain number."""
    if isinstance(value, Decimal):
        number = float(value)
        if Decimal(repr(number)) != value:
            raise ValueError(f"{value} does not survive as a JSON number; draw fewer digits")
        return int(number) if value == value.to_integral_value() and abs(value) < 2**53 else number
    if isinstance(value, Mapping):
        return {key: _numbers(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_numbers(item) for item in value]
    return value
