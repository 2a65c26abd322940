"""Bybit V5 behind Pilot's venue port: the only package that imports pybit, and the only one that speaks Bybit.

`adapter.BybitExchange` is the port's implementation over REST, `stream.BybitStreams` the WebSocket streams;
`payloads` turns Bybit's JSON into Pilot's models and Pilot's requests into Bybit's bodies, `ret_codes` sorts
Bybit's answers into the three outcomes, `urls` says where the adapter may connect, and `profile` how Bybit
applies stops (pilot.core.venues.BYBIT). Nothing is imported here, so naming one module loads no client library.
"""
