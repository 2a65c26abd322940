"""Every path the paper exchange serves, and what answers it: Bybit V5's REST routes and Pilot's own path.

handlers.py holds the endpoints Pilot itself reads and writes; market_data.py and account_data.py the ones the
standard clients (pybit, ccxt, ccxt.pro) use besides. `/v5/market/tickers` is market_data's: the quote's
ticker with the day's figures from the exchange's history.
"""

from __future__ import annotations

from pilot.paper import account_data, handlers, market_data
from pilot.paper.handlers import Route

ORDER, POSITION = ("ContractTrade", "Order"), ("ContractTrade", "Position")

ROUTES: dict[str, Route] = handlers.ROUTES | {
    "/v5/market/tickers": Route("GET", market_data.tickers, False),
    "/v5/market/kline": Route("GET", market_data.kline, False),
    "/v5/market/mark-price-kline": Route("GET", market_data.mark_price_kline, False),
    "/v5/market/recent-trade": Route("GET", market_data.recent_trade, False),
    "/v5/market/funding/history": Route("GET", market_data.funding_history, False),
    "/v5/market/open-interest": Route("GET", market_data.open_interest, False),
    "/v5/account/fee-rate": Route("GET", account_data.fee_rate, True),
    "/v5/account/transaction-log": Route("GET", account_data.transaction_log, True),
    "/v5/asset/coin/query-info": Route("GET", account_data.coin_info, True),
    "/v5/asset/transfer/query-account-coin-balance": Route("GET", account_data.account_coin_balance, True),
    "/v5/order/create-batch": Route("POST", account_data.create_batch, True, ORDER, True),
    "/v5/order/amend-batch": Route("POST", account_data.amend_batch, True, ORDER, True),
    "/v5/order/cancel-batch": Route("POST", account_data.cancel_batch, True, ORDER, True),
    "/v5/position/switch-mode": Route("POST", account_data.switch_mode, True, POSITION, True),
}
