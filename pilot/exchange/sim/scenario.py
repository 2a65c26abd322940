"""Scenario files: load, validate (errors name the JSON path) and freeze what the paper exchange starts from."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from importlib import resources
from pathlib import Path
from typing import Any

CATEGORIES = ("linear", "spot")
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


@dataclass(frozen=True, slots=True)
class WalkSpec:
    start: Decimal
    volatility_pct: Decimal
    seed: int
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

    @property
    def hedge_symbols(self) -> frozenset[str]:
        return frozenset(p.symbol for p in self.positions if p.position_idx)


def load_scenario(source: Path | str | dict[str, Any] | None = None) -> Scenario:
    """Load a scenario from a file path, an already-parsed dict, or (None) the packaged default."""
    if source is None:
        text = resources.files("pilot.exchange.sim").joinpath("scenarios/default.json").read_text()
        return parse_scenario(json.loads(text))
    if isinstance(source, dict):
        return parse_scenario(source)
    path = Path(source)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ScenarioError(f"$: {path} is not valid JSON ({error.msg} at line {error.lineno})") from None
    return parse_scenario(data)


def parse_scenario(data: Any) -> Scenario:
    """Validate a parsed scenario document and freeze it."""
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
        symbol: _price(value, f"prices.{symbol}")
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
    )


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


def _price(data: Any, path: str) -> PriceSpec:
    item = _obj(data, path)
    depth = _obj(item.get("depth", {}), f"{path}.depth")
    walk = None
    bid = ask = mark = None
    if "walk" in item:
        spec = _obj(item["walk"], f"{path}.walk")
        walk = WalkSpec(
            start=_decimal(
                _need(spec, "start", f"{path}.walk"), f"{path}.walk.start", minimum=Decimal("1e-18")
            ),
            volatility_pct=_decimal(
                spec.get("volatilityPct", "0.1"), f"{path}.walk.volatilityPct", minimum=Decimal(0)
            ),
            seed=_int(spec.get("seed", 1), f"{path}.walk.seed"),
            spread_ticks=_int(spec.get("spreadTicks", 1), f"{path}.walk.spreadTicks", minimum=1),
        )
    else:
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
    return ApiKeySpec(
        key=_str(item, "key", path),
        secret=_str(item, "secret", path),
        read_only=bool(read_only),
        permissions=frozen,
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
