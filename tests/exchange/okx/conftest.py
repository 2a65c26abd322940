"""Fixtures for the OKX adapter's tests: the anyio backend and the paper exchange on the article's scenario
(tests/exchange/conftest.py), behind the OKX front where a test asks for it (tests/okx_front)."""

from __future__ import annotations
