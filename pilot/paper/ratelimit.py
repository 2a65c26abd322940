"""Per-key, per-endpoint request limits over one-second windows, with Bybit's X-Bapi-Limit* headers."""

from __future__ import annotations

from dataclasses import dataclass

# Bybit's default UTA limits per second: (linear, spot). Reads are the same for both categories.
LIMITS: dict[str, tuple[int, int]] = {
    "/v5/order/create": (10, 20),
    "/v5/order/amend": (10, 10),
    "/v5/order/cancel": (10, 20),
    "/v5/order/cancel-all": (10, 20),
    "/v5/order/realtime": (50, 50),
    "/v5/order/history": (50, 50),
    "/v5/execution/list": (50, 50),
    "/v5/position/list": (50, 50),
    "/v5/position/set-leverage": (10, 10),
    "/v5/position/trading-stop": (10, 10),
    "/v5/account/wallet-balance": (50, 50),
    "/v5/user/query-api": (50, 50),
}
PUBLIC_LIMIT = 600  # Bybit's IP limit is 600 per 5 s; reported, not enforced, on public endpoints
WINDOW_MS = 1000


@dataclass(frozen=True, slots=True)
class LimitStatus:
    allowed: bool
    limit: int
    remaining: int
    reset_ms: int

    def headers(self) -> dict[str, str]:
        return {
            "X-Bapi-Limit": str(self.limit),
            "X-Bapi-Limit-Status": str(self.remaining),
            "X-Bapi-Limit-Reset-Timestamp": str(self.reset_ms),
        }


class RateLimiter:
    """Counts calls per (api key, path, category) in fixed one-second windows."""

    def __init__(self, setting: bool | dict[str, int]) -> None:
        self.enabled = setting is not False
        self.overrides = setting if isinstance(setting, dict) else {}
        self._windows: dict[tuple[str, str, str], tuple[int, int]] = {}

    def limit_for(self, path: str, category: str) -> int | None:
        if path in self.overrides:
            return self.overrides[path]
        pair = LIMITS.get(path)
        if pair is None:
            return None
        return pair[1] if category == "spot" else pair[0]

    def hit(self, api_key: str, path: str, category: str, now_ms: int) -> LimitStatus:
        """Count one call; say whether it is allowed and what the headers report."""
        limit = self.limit_for(path, category)
        if limit is None or not self.enabled:
            return LimitStatus(True, limit or PUBLIC_LIMIT, (limit or PUBLIC_LIMIT) - 1, now_ms)
        key = (api_key, path, category)
        start, count = self._windows.get(key, (now_ms, 0))
        if now_ms - start >= WINDOW_MS:
            start, count = now_ms, 0
        if count >= limit:
            return LimitStatus(False, limit, 0, start + WINDOW_MS)
        self._windows[key] = (start, count + 1)
        return LimitStatus(True, limit, limit - count - 1, now_ms)


def public_status(now_ms: int) -> LimitStatus:
    return LimitStatus(True, PUBLIC_LIMIT, PUBLIC_LIMIT - 1, now_ms)
