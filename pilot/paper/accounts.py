"""The unified account of the paper exchange: coin wallets, one-way linear positions, margin and equity."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from pilot.core.valuation import liquidation_price
from pilot.paper.market import Market
from pilot.paper.scenario import InstrumentSpec, Scenario

ZERO = Decimal(0)
SETTLE_COIN = "USDT"


@dataclass(slots=True)
class SimPosition:
    """A one-way linear position; size is signed (positive long)."""

    symbol: str
    size: Decimal
    avg_price: Decimal
    leverage: Decimal
    created_ms: int
    updated_ms: int
    take_profit: Decimal = ZERO
    stop_loss: Decimal = ZERO
    trailing_stop: Decimal = ZERO
    cum_realised_pnl: Decimal = ZERO
    cur_realised_pnl: Decimal = ZERO


class Accounts:
    """Wallet balances per coin and linear positions per symbol. Not thread-safe: the engine locks."""

    def __init__(self, scenario: Scenario, market: Market, now_ms: int) -> None:
        self._market = market
        self.wallet: dict[str, Decimal] = dict(scenario.balances)
        self.wallet.setdefault(SETTLE_COIN, ZERO)
        self.linear = {i.symbol: i for i in scenario.instruments if i.category == "linear"}
        self.positions: dict[str, SimPosition] = {}
        self.hedge_legs: dict[str, dict[int, SimPosition]] = {}  # symbol -> {1: Buy leg, 2: Sell leg}
        for symbol, instrument in self.linear.items():
            self.positions[symbol] = SimPosition(
                symbol, ZERO, ZERO, min(Decimal(10), instrument.max_leverage), now_ms, now_ms
            )
        for spec in scenario.positions:
            sign = 1 if spec.side == "Buy" else -1
            position = SimPosition(
                spec.symbol,
                spec.size * sign,
                spec.avg_price,
                spec.leverage,
                now_ms,
                now_ms,
                take_profit=spec.take_profit,
                stop_loss=spec.stop_loss,
            )
            if spec.position_idx:
                self.hedge_legs.setdefault(spec.symbol, {})[spec.position_idx] = position
            else:
                self.positions[spec.symbol] = position
        for symbol, legs in self.hedge_legs.items():  # a hedge symbol shows both legs, the empty one too
            for index in (1, 2):
                legs.setdefault(
                    index, SimPosition(symbol, ZERO, ZERO, self.positions[symbol].leverage, now_ms, now_ms)
                )

    def apply_linear_fill(
        self, symbol: str, signed_qty: Decimal, price: Decimal, fee: Decimal, now_ms: int
    ) -> Decimal:
        """Book a linear fill: weighted-average entry when growing, realised PnL when shrinking. Returns closed size."""
        position = self.positions[symbol]
        closed = ZERO
        realised = -fee
        if position.size == 0 or (position.size > 0) == (signed_qty > 0):
            total = position.size + signed_qty
            position.avg_price = (position.avg_price * abs(position.size) + price * abs(signed_qty)) / abs(
                total
            )
            position.size = total
        else:
            closed = min(abs(signed_qty), abs(position.size))
            direction = 1 if position.size > 0 else -1
            realised += (price - position.avg_price) * closed * direction
            remainder = position.size + signed_qty
            if remainder == 0:
                position.avg_price = ZERO
            elif (remainder > 0) != (position.size > 0):
                position.avg_price = price  # flipped: the new side opened at this fill
            position.size = remainder
        self.wallet[SETTLE_COIN] = self.wallet.get(SETTLE_COIN, ZERO) + realised
        position.cur_realised_pnl += realised
        position.cum_realised_pnl += realised
        position.updated_ms = now_ms
        return closed

    def apply_spot_fill(
        self, instrument: InstrumentSpec, buy: bool, qty: Decimal, price: Decimal, fee: Decimal
    ) -> None:
        """Book a spot fill. A buy pays its fee in the base coin, a sell in the quote coin (as Bybit does)."""
        base, quote = instrument.base_coin, instrument.quote_coin
        value = qty * price
        if buy:
            self.wallet[quote] = self.wallet.get(quote, ZERO) - value
            self.wallet[base] = self.wallet.get(base, ZERO) + qty - fee
        else:
            self.wallet[base] = self.wallet.get(base, ZERO) - qty
            self.wallet[quote] = self.wallet.get(quote, ZERO) + value - fee

    def unrealised_pnl(self, position: SimPosition) -> Decimal:
        if position.size == 0:
            return ZERO
        return (self._market.quote(position.symbol).mark - position.avg_price) * position.size

    def position_im(self, position: SimPosition) -> Decimal:
        mark = self._market.quote(position.symbol).mark
        return abs(position.size) * mark / position.leverage

    def position_mm(self, position: SimPosition) -> Decimal:
        mark = self._market.quote(position.symbol).mark
        return abs(position.size) * mark * self.linear[position.symbol].maintenance_margin_rate

    def settle_equity(self) -> Decimal:
        """USDT equity: wallet balance plus the unrealised PnL of every position."""
        upl = sum((self.unrealised_pnl(p) for p in self.positions.values()), ZERO)
        return self.wallet.get(SETTLE_COIN, ZERO) + upl

    def liq_price(self, position: SimPosition) -> Decimal | None:
        """The core's cross-margin estimate, from the mark and the whole account's USDT equity."""
        mark = self._market.quote(position.symbol).mark
        mmr = self.linear[position.symbol].maintenance_margin_rate
        return liquidation_price(position.size, mark, self.settle_equity(), mmr)

    def usd_price(self, coin: str) -> Decimal:
        """A coin's USD value: USDT/USDC at 1, others at the mid of <COIN>USDT (0 if unknown)."""
        if coin in ("USDT", "USDC", "USD"):
            return Decimal(1)
        try:
            return self._market.quote(f"{coin}USDT").mid
        except KeyError:
            return ZERO

    def total_equity_usd(self) -> Decimal:
        total = self.settle_equity()
        for coin, amount in self.wallet.items():
            if coin != SETTLE_COIN:
                total += amount * self.usd_price(coin)
        return total
