"""Scenario files: load, validate (errors name the JSON path) and freeze what the paper exchange starts from."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from importlib import resources
from pathlib import Path
from typing import Any

from pilot.paper.tape import POINTS_PER_BAR, TapeError, load_tape

CATEGORIES = ("linear", "spot")
PACKAGED = ("default", "moving")  # scenarios shipped in pilot/paper/scenarios/, by name
DEFAULT_FUNDING_INTERVAL_MIN = 480  # instruments-info fundingInterval of Bybit's USDT perpetuals
FAULT_KINDS = ("latency", "drop", "http_5xx", "http_4xx", "rate_limit", "processing", "drip", "non_json")


class ScenarioError(ValueError):
    """A scenario that cannot be used; the message starts with the JSON path of the bad value."""


@dataclass(frozen=True, slots=True)
class InstrumentSpec:
    symbol: str
    category: str
    tick_size: Decimal
    qty_step: Decimal
    min_order_qty: Decimal
    max_order_qty: Decimal
    min_notional: Decimal
    max_leverage: Decimal
    maintenance_margin_rate: Decimal
    base_coin: str
    quote_coin: str
    price_limit_ratio_x: Decimal  # riskParameters.priceLimitRatioX
    price_limit_ratio_y: Decimal  # riskParameters.priceLimitRatioY (>= X)
    risk_tiers: tuple[tuple[Decimal, Decimal, Decimal], ...] = ()  # (riskLimitValue, mmr, max leverage)
    funding_interval_min: int = DEFAULT_FUNDING_INTERVAL_MIN  # linear: minutes between funding settlements
    funding_rate: Decimal = Decimal(0)  # linear: the rate settled at each funding time (0: none settles)


@dataclass(frozen=True, slots=True)
class WalkSpec:
    start: Decimal
    volatility_pct: Decimal  # per step, or per `per_ms` of exchange time when that is set
    seed: int
    spread_ticks: int
    step_ms: int | None = None  # exchange time between steps; None: it steps only on tick()
    per_ms: int | None = None

    @property
    def step_volatility_pct(self) -> Decimal:
        """The standard deviation of one step's log return, in percent (a random walk's sqrt-time scaling)."""
        if self.per_ms is None or self.step_ms is None:
            return self.volatility_pct
        return self.volatility_pct * (Decimal(self.step_ms) / Decimal(self.per_ms)).sqrt()


@dataclass(frozen=True, slots=True)
class TapeSpec:
    file: str
    points: tuple[Decimal, ...]  # the mids the replay visits, scaled (four a bar, tape.py)
    step_ms: Decimal  # exchange time between two points
    loop: bool
    spread_ticks: int


@dataclass(frozen=True, slots=True)
class PriceSpec:
    bid: Decimal | None
    ask: Decimal | None
    mark: Decimal | None
    walk: WalkSpec | None
    depth_levels: int
    depth_size: Decimal | None  # base-coin size per level; None: about 50,000 quote per level
    depth_step_ticks: int
    tape: TapeSpec | None = None


@dataclass(frozen=True, slots=True)
class PositionSpec:
    symbol: str
    side: str
    size: Decimal
    avg_price: Decimal
    leverage: Decimal
    position_idx: int = 0  # 1/2: a leg of a hedge-mode symbol (shown, not traded, by the paper exchange)
    stop_loss: Decimal = Decimal(0)  # 0: none (closed at market when the last price reaches it)
    take_profit: Decimal = Decimal(0)


@dataclass(frozen=True, slots=True)
class ApiKeySpec:
    key: str
    secret: str
    read_only: bool
    permissions: dict[str, tuple[str, ...]]
    ips: tuple[str, ...] = ("*",)  # "*": usable from any address, as Bybit lists an unbound key
    is_master: bool = True  # False: a sub-account's key
    expired_at: str = "1970-01-01T00:00:00Z"  # Bybit's "never" for a key bound to an IP


@dataclass(frozen=True, slots=True)
class FaultSpec:
    """One injected fault: which endpoint, which call(s), what happens. See SCENARIOS.md."""

    path: str
    kind: str
    nth: int | None = None
    every: bool = False
    delay_ms: float = 0.0
    status: int | None = None  # http_5xx: 503 by default; http_4xx: 429
    interval_ms: float = 1000.0


@dataclass(frozen=True, slots=True)
class Scenario:
    instruments: tuple[InstrumentSpec, ...]
    prices: dict[str, PriceSpec]
    positions: tuple[PositionSpec, ...]
    balances: dict[str, Decimal]
    api_keys: tuple[ApiKeySpec, ...]
    faults: tuple[FaultSpec, ...] = ()
    latency_ms: dict[str, float] = field(default_factory=dict)  # "*" applies to every endpoint
    taker_fee: Decimal = Decimal("0.00055")
    maker_fee: Decimal = Decimal("0.0002")
    rate_limits: bool | dict[str, int] = True
    ack_lag_reads: int = 0  # an order stays out of realtime/history/executions for this many list reads
    tpsl_on_create: bool = True  # False: TP/SL sent with a create are accepted and not applied (a lost stop)
    speed: Decimal = Decimal(1)  # exchange time per wall-clock time (0: it moves only on advance())

    @property
    def hedge_symbols(self) -> frozenset[str]:
        return frozenset(p.symbol for p in self.positions if p.position_idx)


def load_scenario(source: Path | str | dict[str, Any] | None = None) -> Scenario:
    """Load a scenario from a file path, a packaged scenario's name ("default", "moving"), an already-parsed
    dict, or (None) the packaged default. A tape's relative `file` is read from the scenario's folder."""
    if isinstance(source, dict):
        return parse_scenario(source)
    return parse_scenario(scenario_document(source), base=_folder(source))


def scenario_document(source: Path | str | None = None) -> dict[str, Any]:
    """The JSON document of a scenario file or packaged scenario (None: the default), to change and parse."""
    name = _packaged(source)
    if name is not None:
        text = resources.files("pilot.paper").joinpath(f"scenarios/{name}.json").read_text()
        return dict(json.loads(text))
    assert source is not None
    path = Path(source)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ScenarioError(f"$: {path} is not valid JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(data, dict):
        raise ScenarioError("$: must be an object")
    return data


def _packaged(source: Path | str | None) -> str | None:
    """The packaged scenario `source` names (a file of that name, if there is one, wins), or None."""
    if source is None:
        return "default"
    if isinstance(source, str) and source in PACKAGED and not Path(source).exists():
        return source
    return None


def _folder(source: Path | str | None) -> Path | None:
    return None if _packaged(source) is not None or source is None else Path(source).parent


def with_moves(
    document: dict[str, Any],
    *,
    walks: dict[str, Decimal] | None = None,
    tapes: dict[str, str] | None = None,
    funding_rate: Decimal | None = None,
    speed: Decimal | None = None,
    seed: int = 1,
) -> dict[str, Any]:
    """A copy of a scenario document with moving prices (what `pilot sim --walk/--tape/--funding/--speed` do).

    `walks`: symbol -> volatility in percent per hour, a walk stepping every second from the symbol's
    current price. `tapes`: symbol -> tape file, replayed one bar per minute of exchange time and scaled to
    start at the symbol's current price. `funding_rate`: settled on every linear instrument at its interval.
    """
    changed: dict[str, Any] = json.loads(json.dumps(document))
    prices = changed.setdefault("prices", {})
    for index, (symbol, per_hour) in enumerate((walks or {}).items()):
        walk = {"start": _start_of(prices, symbol), "volatilityPct": str(per_hour), "perMs": 3_600_000}
        prices[symbol] = _keep_depth(prices.get(symbol), walk=walk | {"stepMs": 1000, "seed": seed + index})
    for symbol, file in (tapes or {}).items():
        tape = {"file": file, "barMs": 60_000, "start": _start_of(prices, symbol)}
        prices[symbol] = _keep_depth(prices.get(symbol), tape=tape)
    if funding_rate is not None:
        for instrument in changed.get("instruments", []):
            if isinstance(instrument, dict) and instrument.get("category") == "linear":
                instrument["fundingRate"] = str(funding_rate)
    if speed is not None:
        changed["speed"] = str(speed)
    return changed


def load_moving_scenario(
    source: Path | str | None,
    *,
    walks: dict[str, Decimal] | None = None,
    tapes: dict[str, str] | None = None,
    funding_rate: Decimal | None = None,
    speed: Decimal | None = None,
    seed: int = 1,
) -> Scenario:
    """A scenario file or packaged scenario with the moves of `with_moves` put in (see there)."""
    document = with_moves(
        scenario_document(source), walks=walks, tapes=tapes, funding_rate=funding_rate, speed=speed, seed=seed
    )
    return parse_scenario(document, base=_folder(source))


def describe_moves(scenario: Scenario) -> list[str]:
    """One line per moving thing in a scenario, for people: each path, and funding where it settles."""
    lines = []
    for symbol, price in scenario.prices.items():
        if price.walk is not None:
            walk = price.walk
            pace = f"every {walk.step_ms} ms" if walk.step_ms is not None else "on tick() only"
            per = f" per {walk.per_ms} ms" if walk.per_ms is not None else " per step"
            lines.append(
                f"{symbol}: random walk from {walk.start}, {walk.volatility_pct}%{per}, a step {pace}"
            )
        elif price.tape is not None:
            tape = price.tape
            bar = tape.step_ms * 4
            end = "then again from the start" if tape.loop else "then holds its last price"
            lines.append(f"{symbol}: replays {tape.file}, a bar every {bar.normalize():f} ms, {end}")
    for instrument in scenario.instruments:
        if instrument.category == "linear" and instrument.funding_rate != 0:
            every = instrument.funding_interval_min
            lines.append(f"{instrument.symbol}: funding rate {instrument.funding_rate} every {every} min")
    return lines


def _start_of(prices: dict[str, Any], symbol: str) -> str:
    """Where a symbol's price stands in a scenario document: its static quote's mid, or its path's start."""
    item = prices.get(symbol)
    if not isinstance(item, dict):
        raise ScenarioError(f"prices.{symbol}: the scenario does not price {symbol}")
    for kind in ("walk", "tape"):
        if isinstance(item.get(kind), dict) and "start" in item[kind]:
            return str(item[kind]["start"])
    if "bid" in item and "ask" in item:
        return str(
            (_decimal(item["bid"], f"prices.{symbol}.bid") + _decimal(item["ask"], f"prices.{symbol}.ask"))
            / 2
        )
    raise ScenarioError(f"prices.{symbol}: cannot tell where its price starts (give its path a start)")


def _keep_depth(item: Any, **path: dict[str, Any]) -> dict[str, Any]:
    depth = item.get("depth") if isinstance(item, dict) else None
    return path | ({"depth": depth} if depth is not None else {})


def parse_scenario(data: Any, base: Path | None = None) -> Scenario:
    """Validate a parsed scenario document and freeze it (`base`: where a tape's relative file is)."""
    root = _obj(data, "$")
    _no_unknown(
        root,
        "$",
        {
            "instruments",
            "prices",
            "positions",
            "balances",
            "apiKeys",
            "faults",
            "latencyMs",
            "fees",
            "rateLimits",
            "ackLagReads",
            "tpslOnCreate",
            "speed",
            "description",
            "sources",
        },
    )
    instruments = tuple(
        _instrument(item, f"instruments[{i}]") for i, item in enumerate(_list(root, "instruments", "$"))
    )
    if not instruments:
        raise ScenarioError("instruments: at least one instrument is needed")
    seen = set()
    for i, spec in enumerate(instruments):
        if (spec.category, spec.symbol) in seen:
            raise ScenarioError(f"instruments[{i}]: {spec.category} {spec.symbol} is listed twice")
        seen.add((spec.category, spec.symbol))
    prices = {
        symbol: _price(value, f"prices.{symbol}", base)
        for symbol, value in _obj(root.get("prices"), "prices").items()
    }
    for spec in instruments:
        if spec.symbol not in prices:
            raise ScenarioError(
                f"prices.{spec.symbol}: missing (instrument {spec.category} {spec.symbol} needs a price)"
            )
    linear = {s.symbol for s in instruments if s.category == "linear"}
    positions = tuple(
        _position(item, f"positions[{i}]", linear) for i, item in enumerate(root.get("positions", []))
    )
    _check_position_modes(positions)
    balances = {
        coin: _decimal(value, f"balances.{coin}", minimum=Decimal(0))
        for coin, value in _obj(root.get("balances", {}), "balances").items()
    }
    keys = tuple(_api_key(item, f"apiKeys[{i}]") for i, item in enumerate(_list(root, "apiKeys", "$")))
    if not keys:
        raise ScenarioError("apiKeys: at least one api key is needed")
    faults = tuple(_fault(item, f"faults[{i}]") for i, item in enumerate(root.get("faults", [])))
    fees = _obj(root.get("fees", {}), "fees")
    return Scenario(
        instruments=instruments,
        prices=prices,
        positions=positions,
        balances=balances,
        api_keys=keys,
        faults=faults,
        latency_ms=_latency(root.get("latencyMs", 0), "latencyMs"),
        taker_fee=_decimal(fees.get("taker", "0.00055"), "fees.taker", minimum=Decimal(0)),
        maker_fee=_decimal(fees.get("maker", "0.0002"), "fees.maker", minimum=Decimal(0)),
        rate_limits=_rate_limits(root.get("rateLimits", True), "rateLimits"),
        ack_lag_reads=_int(root.get("ackLagReads", 0), "ackLagReads", minimum=0),
        tpsl_on_create=_switch(root.get("tpslOnCreate", True), "tpslOnCreate"),
        speed=_decimal(root.get("speed", 1), "speed", minimum=Decimal(0)),
    )


def _switch(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ScenarioError(f"{path}: must be true or false, got {value!r}")
    return value


def _instrument(data: Any, path: str) -> InstrumentSpec:
    item = _obj(data, path)
    category = _str(item, "category", path)
    if category not in CATEGORIES:
        raise ScenarioError(f"{path}.category: must be one of {', '.join(CATEGORIES)}, got {category!r}")
    symbol = _str(item, "symbol", path)
    quote = str(item.get("quoteCoin", "USDT"))
    positive = Decimal("1e-18")
    step = _decimal(_need(item, "qtyStep", path), f"{path}.qtyStep", minimum=positive)
    spot = category == "spot"  # spot minOrderQty is deprecated on Bybit: optional, served, never checked
    minimum = item.get("minOrderQty", str(step)) if spot else _need(item, "minOrderQty", path)
    ratio = item.get("priceLimitRatio", "0.05")
    ratio_x = _decimal(item.get("priceLimitRatioX", ratio), f"{path}.priceLimitRatioX", minimum=Decimal(0))
    ratio_y = _decimal(item.get("priceLimitRatioY", ratio), f"{path}.priceLimitRatioY", minimum=Decimal(0))
    if ratio_y < ratio_x:
        raise ScenarioError(
            f"{path}.priceLimitRatioY: must be at least priceLimitRatioX ({ratio_y} < {ratio_x})"
        )
    max_leverage = _decimal(item.get("maxLeverage", 1), f"{path}.maxLeverage", minimum=Decimal(1))
    return InstrumentSpec(
        symbol=symbol,
        category=category,
        tick_size=_decimal(_need(item, "tickSize", path), f"{path}.tickSize", minimum=positive),
        qty_step=step,
        min_order_qty=_decimal(minimum, f"{path}.minOrderQty", minimum=positive),
        max_order_qty=_decimal(_need(item, "maxOrderQty", path), f"{path}.maxOrderQty", minimum=positive),
        min_notional=_decimal(
            item.get("minNotionalValue", 0), f"{path}.minNotionalValue", minimum=Decimal(0)
        ),
        max_leverage=max_leverage,
        maintenance_margin_rate=_decimal(
            item.get("maintenanceMarginRate", "0.005"), f"{path}.maintenanceMarginRate", minimum=Decimal(0)
        ),
        base_coin=str(item.get("baseCoin") or symbol.removesuffix(quote)),
        quote_coin=quote,
        price_limit_ratio_x=ratio_x,
        price_limit_ratio_y=ratio_y,
        risk_tiers=_risk_tiers(item.get("riskTiers", []), f"{path}.riskTiers"),
        **_funding(item, path, spot),
    )


def _funding(item: dict[str, Any], path: str, spot: bool) -> dict[str, Any]:
    """fundingInterval (minutes, as instruments-info serves it) and fundingRate: linear only."""
    if spot:
        for name in ("fundingInterval", "fundingRate"):
            if name in item:
                raise ScenarioError(f"{path}.{name}: spot has no funding (linear instruments only)")
        return {}
    return {
        "funding_interval_min": _int(
            item.get("fundingInterval", DEFAULT_FUNDING_INTERVAL_MIN), f"{path}.fundingInterval", minimum=1
        ),
        "funding_rate": _decimal(item.get("fundingRate", 0), f"{path}.fundingRate"),
    }


def _risk_tiers(value: Any, path: str) -> tuple[tuple[Decimal, Decimal, Decimal], ...]:
    if not isinstance(value, list):
        raise ScenarioError(f"{path}: must be a list")
    tiers = []
    for i, tier in enumerate(value):
        item = _obj(tier, f"{path}[{i}]")
        tiers.append(
            (
                _decimal(
                    _need(item, "riskLimitValue", f"{path}[{i}]"),
                    f"{path}[{i}].riskLimitValue",
                    minimum=Decimal(0),
                ),
                _decimal(
                    _need(item, "maintenanceMargin", f"{path}[{i}]"),
                    f"{path}[{i}].maintenanceMargin",
                    minimum=Decimal(0),
                ),
                _decimal(
                    _need(item, "maxLeverage", f"{path}[{i}]"), f"{path}[{i}].maxLeverage", minimum=Decimal(1)
                ),
            )
        )
    return tuple(tiers)


def _price(data: Any, path: str, base: Path | None) -> PriceSpec:
    item = _obj(data, path)
    depth = _obj(item.get("depth", {}), f"{path}.depth")
    kinds = [name for name in ("walk", "tape", "bid") if name in item]
    if len(kinds) > 1:
        raise ScenarioError(
            f"{path}: give one of a static quote (bid/ask), walk or tape, not {' and '.join(kinds)}"
        )
    walk = _walk(item["walk"], f"{path}.walk") if "walk" in item else None
    tape = _tape(item["tape"], f"{path}.tape", base) if "tape" in item else None
    bid = ask = mark = None
    if walk is None and tape is None:
        bid = _decimal(_need(item, "bid", path), f"{path}.bid", minimum=Decimal("1e-18"))
        ask = _decimal(_need(item, "ask", path), f"{path}.ask", minimum=Decimal("1e-18"))
        if ask <= bid:
            raise ScenarioError(f"{path}.ask: must be above bid ({ask} <= {bid})")
        mark = _decimal(item["mark"], f"{path}.mark", minimum=Decimal("1e-18")) if "mark" in item else None
    return PriceSpec(
        bid=bid,
        ask=ask,
        mark=mark,
        walk=walk,
        depth_levels=_int(depth.get("levels", 5), f"{path}.depth.levels", minimum=1),
        depth_size=_decimal(depth["size"], f"{path}.depth.size", minimum=Decimal("1e-18"))
        if "size" in depth
        else None,
        depth_step_ticks=_int(depth.get("stepTicks", 1), f"{path}.depth.stepTicks", minimum=1),
        tape=tape,
    )


def _walk(data: Any, path: str) -> WalkSpec:
    """{start, volatilityPct, seed, spreadTicks, stepMs?, perMs?}: without stepMs the walk steps only on
    tick() (volatilityPct per step); with it, every stepMs of exchange time; perMs makes volatilityPct the
    move over that much time (each step's share: volatilityPct x sqrt(stepMs / perMs))."""
    spec = _obj(data, path)
    _no_unknown(spec, path, {"start", "volatilityPct", "seed", "spreadTicks", "stepMs", "perMs"})
    per_ms = _int(spec["perMs"], f"{path}.perMs", minimum=1) if "perMs" in spec else None
    step_ms = _int(spec["stepMs"], f"{path}.stepMs", minimum=1) if "stepMs" in spec else None
    if per_ms is not None and step_ms is None:
        step_ms = min(per_ms, 1000)
    return WalkSpec(
        start=_decimal(_need(spec, "start", path), f"{path}.start", minimum=Decimal("1e-18")),
        volatility_pct=_decimal(
            spec.get("volatilityPct", "0.1"), f"{path}.volatilityPct", minimum=Decimal(0)
        ),
        seed=_int(spec.get("seed", 1), f"{path}.seed"),
        spread_ticks=_int(spec.get("spreadTicks", 1), f"{path}.spreadTicks", minimum=1),
        step_ms=step_ms,
        per_ms=per_ms,
    )


def _tape(data: Any, path: str, base: Path | None) -> TapeSpec:
    """{file, barMs | speed, loop, scale | start, spreadTicks}: a recorded tape replayed (tape.py)."""
    spec = _obj(data, path)
    _no_unknown(spec, path, {"file", "barMs", "speed", "loop", "scale", "start", "spreadTicks"})
    file = _str(spec, "file", path)
    try:
        tape = load_tape(file, base)
    except TapeError as error:
        raise ScenarioError(f"{path}.file: {error}") from None
    for pair in (("barMs", "speed"), ("scale", "start")):
        if all(name in spec for name in pair):
            raise ScenarioError(f"{path}: give {pair[0]} or {pair[1]}, not both")
    if "barMs" in spec:
        bar_ms = Decimal(_int(spec["barMs"], f"{path}.barMs", minimum=1))
    else:
        speed = _decimal(spec.get("speed", 1), f"{path}.speed", minimum=Decimal("1e-9"))
        bar_ms = Decimal(tape.interval_ms) / speed
    points = tape.points()
    if "start" in spec:  # times the start, then divided by the first: the first point is the start exactly
        start = _decimal(spec["start"], f"{path}.start", minimum=Decimal("1e-18"))
        scaled = tuple(point * start / points[0] for point in points)
    else:
        scale = _decimal(spec.get("scale", 1), f"{path}.scale", minimum=Decimal("1e-18"))
        scaled = tuple(point * scale for point in points)
    return TapeSpec(
        file=file,
        points=scaled,
        step_ms=bar_ms / POINTS_PER_BAR,
        loop=_switch(spec.get("loop", False), f"{path}.loop"),
        spread_ticks=_int(spec.get("spreadTicks", 1), f"{path}.spreadTicks", minimum=1),
    )


def _position(data: Any, path: str, linear: set[str]) -> PositionSpec:
    item = _obj(data, path)
    symbol = _str(item, "symbol", path)
    if symbol not in linear:
        raise ScenarioError(f"{path}.symbol: {symbol!r} is not a linear instrument of this scenario")
    side = _str(item, "side", path)
    if side not in ("Buy", "Sell"):
        raise ScenarioError(f'{path}.side: must be "Buy" or "Sell", got {side!r}')
    return PositionSpec(
        symbol=symbol,
        side=side,
        size=_decimal(_need(item, "size", path), f"{path}.size", minimum=Decimal(0)),
        avg_price=_decimal(_need(item, "avgPrice", path), f"{path}.avgPrice", minimum=Decimal("1e-18")),
        leverage=_decimal(item.get("leverage", 10), f"{path}.leverage", minimum=Decimal(1)),
        position_idx=_position_idx(item.get("positionIdx", 0), f"{path}.positionIdx"),
        stop_loss=_decimal(item.get("stopLoss", 0), f"{path}.stopLoss", minimum=Decimal(0)),
        take_profit=_decimal(item.get("takeProfit", 0), f"{path}.takeProfit", minimum=Decimal(0)),
    )


def _check_position_modes(positions: tuple[PositionSpec, ...]) -> None:
    """One-way symbols have one position (positionIdx 0); hedge symbols a Buy leg (1) and a Sell leg (2)."""
    seen: dict[str, set[int]] = {}
    for i, spec in enumerate(positions):
        path = f"positions[{i}]"
        if spec.position_idx and spec.side != ("Buy" if spec.position_idx == 1 else "Sell"):
            raise ScenarioError(
                f"{path}.side: positionIdx {spec.position_idx} is the {'Buy' if spec.position_idx == 1 else 'Sell'} leg"
            )
        indexes = seen.setdefault(spec.symbol, set())
        if spec.position_idx in indexes or (indexes and (0 in indexes or spec.position_idx == 0)):
            raise ScenarioError(
                f"{path}.positionIdx: {spec.symbol} already has a position in another mode or leg"
            )
        indexes.add(spec.position_idx)


def _position_idx(value: Any, path: str) -> int:
    if value not in (0, 1, 2) or isinstance(value, bool):
        raise ScenarioError(
            f"{path}: must be 0 (one-way), 1 (hedge Buy leg) or 2 (hedge Sell leg), got {value!r}"
        )
    return int(value)


def _api_key(data: Any, path: str) -> ApiKeySpec:
    item = _obj(data, path)
    permissions = _obj(item.get("permissions", {}), f"{path}.permissions")
    frozen: dict[str, tuple[str, ...]] = {}
    for group, names in permissions.items():
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ScenarioError(f"{path}.permissions.{group}: must be a list of strings")
        frozen[group] = tuple(names)
    read_only = item.get("readOnly", False)
    if read_only not in (True, False, 0, 1):
        raise ScenarioError(f"{path}.readOnly: must be true/false (or 0/1)")
    ips = item.get("ips", ["*"])
    if not isinstance(ips, list) or not all(isinstance(ip, str) for ip in ips):
        raise ScenarioError(f"{path}.ips: must be a list of strings")
    if not isinstance(item.get("isMaster", True), bool):
        raise ScenarioError(f"{path}.isMaster: must be true or false")
    return ApiKeySpec(
        key=_str(item, "key", path),
        secret=_str(item, "secret", path),
        read_only=bool(read_only),
        permissions=frozen,
        ips=tuple(ips),
        is_master=item.get("isMaster", True),
        expired_at=str(item.get("expiredAt", "1970-01-01T00:00:00Z")),
    )


def _fault(data: Any, path: str) -> FaultSpec:
    item = _obj(data, path)
    kind = _str(item, "kind", path)
    if kind not in FAULT_KINDS:
        raise ScenarioError(f"{path}.kind: must be one of {', '.join(FAULT_KINDS)}, got {kind!r}")
    endpoint = _str(item, "path", path)
    if not endpoint.startswith("/v5/"):
        raise ScenarioError(f"{path}.path: must be a /v5/... endpoint path, got {endpoint!r}")
    nth = item.get("nth")
    return FaultSpec(
        path=endpoint,
        kind=kind,
        nth=None if nth is None else _int(nth, f"{path}.nth", minimum=1),
        every=bool(item.get("every", False)),
        delay_ms=float(_decimal(item.get("delayMs", 0), f"{path}.delayMs", minimum=Decimal(0))),
        status=None if "status" not in item else _int(item["status"], f"{path}.status", minimum=400),
        interval_ms=float(_decimal(item.get("intervalMs", 1000), f"{path}.intervalMs", minimum=Decimal(1))),
    )


def _latency(value: Any, path: str) -> dict[str, float]:
    if isinstance(value, dict):
        return {key: float(_decimal(v, f"{path}.{key}", minimum=Decimal(0))) for key, v in value.items()}
    return {"*": float(_decimal(value, path, minimum=Decimal(0)))}


def _rate_limits(value: Any, path: str) -> bool | dict[str, int]:
    if isinstance(value, bool):
        return value
    return {key: _int(v, f"{path}.{key}", minimum=1) for key, v in _obj(value, path).items()}


def _obj(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ScenarioError(f"{path}: must be an object")
    return value


def _list(parent: dict[str, Any], key: str, path: str) -> list[Any]:
    value = parent.get(key)
    if not isinstance(value, list):
        raise ScenarioError(f"{key if path == '$' else f'{path}.{key}'}: must be a list")
    return value


def _need(parent: dict[str, Any], key: str, path: str) -> Any:
    if key not in parent:
        raise ScenarioError(f"{path}.{key}: missing")
    return parent[key]


def _str(parent: dict[str, Any], key: str, path: str) -> str:
    value = _need(parent, key, path)
    if not isinstance(value, str) or not value:
        raise ScenarioError(f"{path}.{key}: must be a non-empty string")
    return value


def _decimal(value: Any, path: str, *, minimum: Decimal | None = None) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ScenarioError(f"{path}: must be a number or a decimal string, got {value!r}")
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise ScenarioError(f"{path}: {value!r} is not a decimal number") from None
    if not number.is_finite() or (minimum is not None and number < minimum):
        raise ScenarioError(f"{path}: {value!r} is out of range (minimum {minimum})")
    return number


def _int(value: Any, path: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError(f"{path}: must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ScenarioError(f"{path}: must be at least {minimum}, got {value}")
    return value


def _no_unknown(item: dict[str, Any], path: str, allowed: set[str]) -> None:
    for key in item:
        if key not in allowed:
            raise ScenarioError(f"{path}.{key}: unknown field (allowed: {', '.join(sorted(allowed))})")
