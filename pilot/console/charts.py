"""The Charts page: placeholder until written."""

from __future__ import annotations

from typing import Any

from pilot.app.runtime import Runtime


async def chart_data(runtime: Runtime) -> dict[str, Any]:
    return {}
