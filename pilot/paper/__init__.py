"""The paper exchange: a Bybit V5 REST look-alike on 127.0.0.1 with a real matching engine and injected faults.

It speaks what pybit 5.17 sends (same paths, signing, envelope, string numbers, retCodes, rate-limit headers),
so the real Bybit adapter runs against it unchanged. Start it in-process::

    from pilot.paper import start_paper_exchange

    with start_paper_exchange() as paper:          # packaged default scenario, ephemeral port
        paper.url, paper.api_key, paper.api_secret  # "http://127.0.0.1:PORT" and the scenario's first key
        paper.ws_url                                 # "ws://127.0.0.1:PORT": Bybit V5 WebSocket (streams.py),
                                                     # also answered at GET /pilot/streams (Pilot's own path)
        paper.stream_faults.stall = True; paper.drop_streams()  # WebSocket faults (pilot.paper.streams);
        paper.stream_faults.unavailable = True               # with drop_streams(): the streams are down
        paper.add_fault("/v5/order/create", "drop")  # the next create is executed, then the socket is closed
        paper.request_count("/v5/order/create")      # every request received, faulted ones included
        paper.set_prices("BTCUSDT", bid=80000, ask=80000.1)  # resting orders the new quote crosses fill
        paper.tick()                                 # one deterministic step of every price path
        paper.advance(60_000)                        # a minute of exchange time: paths, funding, liquidations
        paper.set_ack_lag(2)                         # new orders show only after two list reads
        paper.orders(), paper.position("BTCUSDT"), paper.balance("USDT")

`start_paper_exchange(scenario=None, port=0, state_path=None, *, speed=None, wall_clock=None)` takes a
scenario path, a packaged scenario's name ("default", "moving"), a dict or None (the default scenario, see
SCENARIOS.md). With `state_path`, the account (balances, positions, orders, fills, prices, the paths'
positions and the exchange's time) is loaded from that file (and the log of changes beside it) when it
exists, and every change is logged, in time that does not grow with the account's history, so a restarted
paper exchange continues where the last one stopped (pilot.paper.state_log; `reset_state` forgets it). Only one running exchange serves a state file: a second is refused with
StateInUse, naming the first's URL. The server runs on its own thread and event loop, so it serves sync
callers (pybit in worker threads) and async tests alike; `with` and `async with` both stop it on exit.

Time (pilot.paper.clocks): the market runs `speed` times faster than the wall clock (the scenario's
`speed`, or `speed=`; 0 stands still until `advance(ms)`), and prices that follow a path move with it
(pilot.paper.market, .path, .tape): before each request is answered, and every `ticker_ms` of wall
time on the server's own loop, so the WebSocket streams push moves nobody asked for. Each move fills the
resting orders it crosses and triggers stops (Engine.rematch), then liquidates the positions whose mark
reached their liqPrice (.liquidation); funding settles at each funding time (.funding). Signed requests are
still checked against the wall clock the callers sign with (`wall_clock=` injects one; `set_clock_offset`
drifts it). `now_ms()` is the market's time, `server_ms()` the server clock's.

Fault kinds (`add_fault(path, kind, nth=None, every=False, delay_ms=0, status=None, interval_ms=1000)`):
``latency`` (wait delay_ms, then process and answer), ``drop`` (process, close without answering),
``http_5xx`` / ``http_4xx`` (answer HTTP `status`, default 503 / 429, not processed), ``rate_limit`` (retCode 10006 with a future reset header, not
processed), ``processing`` (linear: retCode 110079, not processed; spot: the request is executed and the
answer is retCode 170035 "Submitted to the system for processing"), ``drip`` (process, then send the answer
one byte every interval_ms), ``non_json`` (process, answer an HTML page with HTTP 200).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pilot.paper.clocks import wall_clock_ms
    from pilot.paper.exchange import PaperExchange, reset_state, start_paper_exchange
    from pilot.paper.lock import StateError, StateInUse, serves_key, serving_url
    from pilot.paper.scenario import FAULT_KINDS, Scenario, ScenarioError, load_scenario

__all__ = [
    "FAULT_KINDS",
    "PaperExchange",
    "Scenario",
    "ScenarioError",
    "StateError",
    "StateInUse",
    "load_scenario",
    "reset_state",
    "serves_key",
    "serving_url",
    "start_paper_exchange",
    "wall_clock_ms",
]

# Each name from the module that defines it, imported when first asked for: `pilot serve` attached to a
# running exchange reads its lock and scenario without importing the exchange itself (its engine, HTTP and
# WebSocket servers).
_HOMES = {
    "FAULT_KINDS": "scenario",
    "PaperExchange": "exchange",
    "Scenario": "scenario",
    "ScenarioError": "scenario",
    "StateError": "lock",
    "StateInUse": "lock",
    "load_scenario": "scenario",
    "reset_state": "exchange",
    "serves_key": "lock",
    "serving_url": "lock",
    "start_paper_exchange": "exchange",
    "wall_clock_ms": "clocks",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"pilot.paper.{home}"), name)
