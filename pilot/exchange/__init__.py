"""The venue port's vocabulary in Pilot's words (models, errors, listings, symbols, stream events, the
recordings' format), one package per venue beneath it (bybit/, okx/), and the one module that names each
environment's adapter (adapters.py)."""
