"""The venue port's vocabulary in Pilot's words (models, errors, listings, symbols, stream events), one package
per venue beneath it (bybit/), and the one module that names each environment's adapter (adapters.py)."""
