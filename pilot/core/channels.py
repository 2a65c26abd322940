"""Where a human decides parked actions outside the MCP client, and what to tell a human who has none.

Three channels decide, each opened by a key under "confirm" in policy.json: `pilot confirm` (the CLI,
`cliChannel`), `pilot console` (the web page, `consoleChannel`) and a Telegram bot (`telegram`, with the
approvers' user ids). ntfy only notifies: its button opens the console's page for the action, so it needs
the console channel. Everything that names a channel, its switch or how a human decides there reads it here.
"""

from __future__ import annotations

from typing import Literal

Via = Literal["cli", "console", "telegram"]
# Each channel: what a sentence calls it, and the key under "confirm" in policy.json that opens it.
CHANNELS: dict[Via, tuple[str, str]] = {
    "cli": ("CLI", "cliChannel"),
    "console": ("console", "consoleChannel"),
    "telegram": ("Telegram", "telegram"),
}
# What only a human can do when an action needs a human and the client cannot ask one.
REACH_A_HUMAN = (
    "use a client that can show confirmation forms (MCP form elicitation), or open a channel in policy.json "
    "(confirm.cliChannel or confirm.consoleChannel true, or confirm.telegram with your Telegram user id) and decide there"
)


def how_to_decide(via: Via, confirmation_id: str, console_url: str) -> str:
    """How a human decides `confirmation_id` on one channel, in a few words."""
    if via == "cli":
        return f"run `pilot confirm approve {confirmation_id}` (or reject)"
    if via == "console":
        return f"open {approval_url(console_url, confirmation_id)} (`pilot console`) and approve or reject"
    return "press Approve or Reject in the Telegram message Pilot sent you"


def approval_url(console_url: str, confirmation_id: str) -> str:
    """The console's page for one parked action."""
    return f"{console_url.rstrip('/')}/approvals/{confirmation_id}"


def where_to_decide(open_channels: tuple[Via, ...], confirmation_id: str, console_url: str) -> str:
    """The human's line for a parked action: how to decide it on each channel that is open, and only those."""
    ways = [how_to_decide(via, confirmation_id, console_url) for via in open_channels]
    return "; or ".join(ways) if ways else "no channel is open to decide it: " + REACH_A_HUMAN


def names(open_channels: tuple[Via, ...]) -> str:
    """The open channels as a sentence names them: "CLI or console"."""
    return " or ".join(CHANNELS[via][0] for via in open_channels) or "no channel"
