"""Where a human decides parked actions outside the MCP client, and what to tell a human who has none.

`pilot confirm` (the CLI) and `pilot console` (the web page) each open with a switch under "confirm" in
policy.json. Everything that names a channel or its switch reads it here.
"""

from __future__ import annotations

from typing import Literal

Via = Literal["cli", "console"]
# Each channel: what a sentence calls it, and the switch under "confirm" in policy.json that opens it.
CHANNELS: dict[Via, tuple[str, str]] = {
    "cli": ("CLI", "cliChannel"),
    "console": ("console", "consoleChannel"),
}
# What only a human can do when an action needs a human and the client cannot ask one.
REACH_A_HUMAN = (
    "use a client that can show confirmation forms (MCP form elicitation), or set "
    + " or ".join(f"confirm.{switch}" for _, switch in CHANNELS.values())
    + " to true in policy.json and decide there"
)
