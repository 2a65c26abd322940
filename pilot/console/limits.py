"""The Policy page: placeholder until written."""

from __future__ import annotations

from typing import Any

from pilot.app.runtime import Runtime


async def policy_view(runtime: Runtime) -> Any:
    return runtime.policy()
