"""A paper account that persists: a restarted paper exchange continues from its state file."""

from __future__ import annotations

import json
import os
from decimal import Decimal

import pytest
from click.testing import CliRunner

from pilot.cli import main
from pilot.cli.sim import format_banner
from pilot.exchange.bybit.adapter import BybitExchange
from pilot.exchange.errors import DuplicateOrderLinkId
from pilot.exchange.models import OrderRequest
from pilot.paper import StateError, StateInUse, reset_state, start_paper_exchange
from tests.exchange.conftest import TIMEOUT_SECONDS
from tests.scenarios import ARTICLE
from tests.venue import connect_adapter

pytestmark = pytest.mark.anyio


def adapter_for(paper) -> BybitExchange:
    return connect_adapter(paper, timeout_seconds=TIMEOUT_SECONDS)


def buy(link: str, qty: str = "0.00031", price: str = "80300", tif: str = "IOC") -> OrderRequest:
    return OrderRequest("linear", "BTCUSDT", "Buy", Decimal(qty), Decimal(price), tif, link)


async def test_a_restarted_paper_exchange_continues_the_account(tmp_path):
    state = tmp_path / "paper.json"
    with start_paper_exchange(ARTICLE, state_path=state) as paper:
        adapter = adapter_for(paper)
        await adapter.create_order(buy("filled"))
        resting = await adapter.create_order(buy("resting", qty="0.0002", price="79000.0", tif="GTC"))
        await adapter.set_leverage("linear", "BTCUSDT", Decimal(5))
        paper.set_prices("ETHUSDT", bid="3000", ask="3000.01")
        before = (await adapter.get_balance(), await adapter.get_positions("linear"))
        await adapter.close()
    assert not list(tmp_path.glob("*.tmp"))  # written atomically: no temporary file left behind

    with start_paper_exchange(ARTICLE, state_path=state) as paper:
        adapter = adapter_for(paper)
        assert (await adapter.get_balance(), await adapter.get_positions("linear")) == before
        assert (await adapter.get_position("linear", "BTCUSDT")).leverage == 5
        assert [o.order_id for o in await adapter.get_open_orders("linear", "BTCUSDT")] == [resting.order_id]
        filled = await adapter.find_order("linear", "BTCUSDT", "filled")
        assert filled is not None and filled.status == "Filled"
        assert len(await adapter.get_executions("linear", "BTCUSDT", filled.order_id)) == 1
        assert (await adapter.get_touch("linear", "ETHUSDT")).bid == Decimal("3000.00")
        with pytest.raises(DuplicateOrderLinkId):  # client order ids are remembered too
            await adapter.create_order(buy("filled"))
        await adapter.close()


async def test_reset_starts_the_next_run_from_the_scenario(tmp_path):
    state = tmp_path / "paper.json"
    with start_paper_exchange(ARTICLE, state_path=state) as paper:
        adapter = adapter_for(paper)
        await adapter.create_order(buy("before-reset"))
        await adapter.close()
    result = CliRunner().invoke(main, ["sim", "reset", "--state", str(state)])
    assert result.exit_code == 0 and not state.exists()
    assert reset_state(state) is False
    with start_paper_exchange(ARTICLE, state_path=state) as paper:
        assert paper.position("BTCUSDT").size == 0 and paper.balance("USDT") == 1000
        assert json.loads(state.read_text())["orders"] == []  # the fresh state is saved at once
        assert "state:" in format_banner(paper)


def test_a_state_this_scenario_cannot_continue_is_refused(tmp_path):
    damaged = tmp_path / "damaged.json"
    damaged.write_text("{not json")
    with pytest.raises(StateError):
        start_paper_exchange(state_path=damaged)
    foreign = tmp_path / "foreign.json"
    with start_paper_exchange(state_path=foreign):
        pass
    data = json.loads(foreign.read_text())
    data["positions"][0]["symbol"] = "DOGEUSDT"
    foreign.write_text(json.dumps(data))
    with pytest.raises(StateError, match="DOGEUSDT"):
        start_paper_exchange(state_path=foreign)
    result = CliRunner().invoke(main, ["sim", "--state", str(foreign)])
    assert result.exit_code == 2 and "pilot sim reset --state" in result.output


def test_a_second_paper_exchange_on_a_state_file_in_use_is_refused_naming_the_first(tmp_path):
    state = tmp_path / "paper.json"
    with start_paper_exchange(ARTICLE, state_path=state) as first:
        saved = state.read_bytes()
        with pytest.raises(StateInUse) as refused:
            start_paper_exchange(ARTICLE, state_path=state)
        with pytest.raises(StateInUse):
            reset_state(state)  # the running one would write the account back
        assert (refused.value.url, refused.value.pid) == (first.url, os.getpid())
        assert state.read_bytes() == saved
    with start_paper_exchange(ARTICLE, state_path=state):  # free once the first stopped
        pass


def test_a_start_refused_for_a_damaged_state_leaves_the_file_free(tmp_path):
    damaged = tmp_path / "damaged.json"
    damaged.write_text("{not json")
    with pytest.raises(StateError):
        start_paper_exchange(ARTICLE, state_path=damaged)
    assert reset_state(damaged) is True
    with start_paper_exchange(ARTICLE, state_path=damaged) as paper:
        assert paper.balance("USDT") == 1000
