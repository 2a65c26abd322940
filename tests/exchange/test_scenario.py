"""Scenario files: the default has Bybit's real filters, the article's has its own; bad ones name the JSON path."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest
import requests

from pilot.paper import ScenarioError, load_scenario, start_paper_exchange
from tests.exchange.test_paper_matching import default_scenario
from tests.scenarios import ARTICLE
from tests.venue import connect_adapter


def test_the_article_scenario_has_the_worked_example_instruments():
    scenario = load_scenario(ARTICLE)
    rules = {(i.category, i.symbol): i for i in scenario.instruments}
    btc = rules[("linear", "BTCUSDT")]
    assert (btc.tick_size, btc.qty_step, btc.min_order_qty) == (
        Decimal("0.1"),
        Decimal("0.00001"),
        Decimal("0.00001"),
    )
    assert btc.min_notional <= 5 and Decimal("0.00031") % btc.qty_step == 0
    sol = rules[("linear", "SOLUSDT")]
    assert (sol.tick_size, sol.qty_step, sol.min_order_qty, sol.min_notional) == (
        Decimal("0.01"),
        Decimal("0.01"),
        Decimal("0.1"),
        Decimal(5),
    )
    assert {symbol for _, symbol in rules} == {"BTCUSDT", "ETHUSDT", "SOLUSDT"}
    assert scenario.balances == {"USDT": Decimal(1000)} and not scenario.api_keys[0].permissions["Wallet"]


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda s: s["instruments"][2].update(tickSize="abc"), "instruments[2].tickSize"),
        (lambda s: s["instruments"][0].update(category="option"), "instruments[0].category"),
        (lambda s: s["prices"].pop("SOLUSDT"), "prices.SOLUSDT"),
        (lambda s: s["prices"]["BTCUSDT"].update(ask="1"), "prices.BTCUSDT.ask"),
        (
            lambda s: s.update(positions=[{"symbol": "XRPUSDT", "side": "Buy", "size": 1, "avgPrice": 1}]),
            "positions[0].symbol",
        ),
        (lambda s: s.update(faults=[{"path": "/v5/order/create", "kind": "explode"}]), "faults[0].kind"),
        (lambda s: s["apiKeys"][0].pop("secret"), "apiKeys[0].secret"),
        (lambda s: s.update(surprise=1), "$.surprise"),
        (
            lambda s: s["instruments"][0].update(priceLimitRatioX="0.03", priceLimitRatioY="0.02"),
            "instruments[0].priceLimitRatioY",
        ),
        (
            lambda s: s.update(
                positions=[{"symbol": "BTCUSDT", "side": "Sell", "size": 1, "avgPrice": 1, "positionIdx": 1}]
            ),
            "positions[0].side",
        ),
        (lambda s: s.update(ackLagReads=-1), "ackLagReads"),
    ],
)
def test_bad_scenarios_are_refused_naming_the_json_path(edit, path):
    scenario = copy.deepcopy(default_scenario())
    edit(scenario)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(scenario)
    assert str(caught.value).startswith(path)


def test_scenario_faults_fire_on_the_nth_call():
    scenario = default_scenario()
    scenario["faults"] = [{"path": "/v5/market/time", "kind": "http_5xx", "nth": 2}]
    with start_paper_exchange(scenario) as paper:
        codes = [requests.get(f"{paper.url}/v5/market/time", timeout=2).status_code for _ in range(3)]
    assert codes == [200, 503, 200]


def test_unknown_runtime_fault_kind_is_refused(paper):
    with pytest.raises(ValueError, match="unknown fault kind"):
        paper.add_fault("/v5/order/create", "explode")


@pytest.mark.anyio
async def test_the_default_scenario_serves_bybits_real_minimums_to_the_adapter():
    with start_paper_exchange() as paper:
        adapter = connect_adapter(paper)
        linear = await adapter.get_instrument("linear", "BTCUSDT")
        spot = await adapter.get_instrument("spot", "BTCUSDT")
        band = await adapter.get_price_band("spot", "BTCUSDT")
        await adapter.close()
    assert (linear.qty_step, linear.min_qty, linear.min_notional, linear.tick_size) == (
        Decimal("0.001"),
        Decimal("0.001"),
        Decimal(5),
        Decimal("0.1"),
    )
    assert (spot.qty_step, spot.min_qty, spot.min_notional) == (Decimal("0.000001"), Decimal("0.000001"), 5)
    assert band.buy_limit == Decimal(
        "80621.1"
    )  # the symbol's mark (standing for the index) x (1 + X 0.005), floored
    assert band.outside == "reject"
