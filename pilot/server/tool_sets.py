"""Which tools `pilot serve --tools` exposes: a named set, or a list of tool names.

read   the reads only: market data, account state, the policy and room left, a confirmation's status;
       nothing that plans, sends, cancels or changes a setting
trade  planning and every state-changing tool, with the reads their answers send an agent to
       (get_policy, get_positions, get_open_orders, get_confirmation_status), for an agent that takes
       market data from elsewhere (Bybit's own MCP server, say)
all    every tool (the default)
"""

from __future__ import annotations

READ = frozenset(
    {
        "get_ticker",
        "get_orderbook",
        "get_instrument_rules",
        "get_balances",
        "get_positions",
        "get_open_orders",
        "get_policy",
        "get_confirmation_status",
        "get_order_history",
        "get_fills",
        "get_closed_pnl",
    }
)
CHANGING = frozenset(
    {
        "plan_order",
        "place_order",
        "close_position",
        "cancel_order",
        "set_leverage",
        "activate_kill_switch",
        "cancel_confirmation",
        "cancel_all_orders",
        "set_trading_stop",
        "plan_amend",
    }
)
REFERRED_TO = frozenset({"get_policy", "get_positions", "get_open_orders", "get_confirmation_status"})

TOOL_SETS: dict[str, frozenset[str]] = {
    "read": READ,
    "trade": CHANGING | REFERRED_TO,
    "all": READ | CHANGING,
}
