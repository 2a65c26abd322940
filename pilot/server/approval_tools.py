"""Tools over a parked confirmation: read where it stands, or withdraw it. Neither can approve anything."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures at runtime.

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from pilot.app.answers.responses import ActionAnswer
from pilot.app.human import approvals
from pilot.app.runtime.runtime import Runtime
from pilot.server import arguments
from pilot.server.arguments import ConfirmationId

READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
WITHDRAW = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


def register_approval_tools(mcp: MCPServer, runtime: Runtime) -> None:
    """get_confirmation_status and cancel_confirmation."""

    @mcp.tool(annotations=READ)
    async def get_confirmation_status(confirmation_id: ConfirmationId) -> ActionAnswer:
        """Where a parked confirmation stands: pending, approved, rejected, expired or executed. Read only."""
        return await approvals.confirmation_status(runtime, arguments.confirmation_id(confirmation_id))

    @mcp.tool(annotations=WITHDRAW)
    async def cancel_confirmation(
        confirmation_id: Annotated[str, Field(description="A pending confirmation to withdraw")],
    ) -> ActionAnswer:
        """Withdraw a pending confirmation before a human decides. It cannot approve anything."""
        return await approvals.withdraw(runtime, arguments.confirmation_id(confirmation_id))
