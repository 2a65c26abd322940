"""`pilot phone telegram-token | ntfy-token | test | forget`: the phone channels' secrets, and a test send.

Who may approve is in policy.json (confirm.telegram.approvers, confirm.ntfy); what lets Pilot reach them is
stored here, sealed under the master key (pilot.keys.channel_secrets), never in policy.json.
"""

from __future__ import annotations

import asyncio
import sys

import click

from pilot.app.human.phone_setup import forget, store_ntfy_token, store_telegram_token, test_channels
from pilot.cli.home import home_option, on_desk, resolve_home
from pilot.cli.output import CheckFailed, emit_json, format_option, wants_json
from pilot.core.errors import ErrorCode


@click.group("phone")
@home_option
def command() -> None:
    """Approvals on your phone: a Telegram bot (Approve / Reject buttons) and ntfy notifications. Both are off
    until policy.json names them (confirm.telegram, confirm.ntfy)."""


_stdin = click.option("--stdin", "from_stdin", is_flag=True, help="Read the token as one line on stdin.")


@command.command("telegram-token")
@_stdin
@home_option
@format_option()
def telegram_token(from_stdin: bool, output: str) -> None:
    """Store the bot token @BotFather gave (checked with Telegram first), sealed under the master key."""
    home = resolve_home()
    token = _read("Telegram bot token", from_stdin)
    username = asyncio.run(store_telegram_token(home, token))
    if wants_json():
        emit_json({"home": str(home), "bot": username})
        return
    click.echo(f"Stored the token of @{username}.")
    click.echo(
        f"Each approver: open a chat with @{username} and send /start; put their Telegram user ids in "
        'policy.json as "confirm": {"telegram": {"approvers": [ID]}}; then `pilot phone test`.'
    )


@command.command("ntfy-token")
@_stdin
@home_option
@format_option()
def ntfy_token(from_stdin: bool, output: str) -> None:
    """Store an ntfy access token (tk_...) for a protected topic (a public ntfy.sh topic needs none)."""
    home = resolve_home()
    store_ntfy_token(home, _read("ntfy access token", from_stdin))
    if wants_json():
        emit_json({"home": str(home), "stored": "ntfy"})
    else:
        click.echo("Stored the ntfy access token.")


@command.command("forget")
@click.argument("channel", type=click.Choice(["telegram", "ntfy"]))
@home_option
@format_option()
def forget_command(channel: str, output: str) -> None:
    """Delete a channel's stored token (the channel stops pushing within a second)."""
    home = resolve_home()
    existed = forget(home, "telegram" if channel == "telegram" else "ntfy")
    if wants_json():
        emit_json({"home": str(home), "channel": channel, "deleted": existed})
    else:
        click.echo(f"Deleted the {channel} token." if existed else f"No {channel} token was stored.")


@command.command("test")
@home_option
@format_option()
def test(output: str) -> None:
    """Send a test on each channel policy.json opens; exit 1 if one fails, or none is open."""
    home = resolve_home()
    results = on_desk(home, test_channels)
    if not results:
        raise CheckFailed(
            ErrorCode.NO_PHONE_CHANNEL,
            "no phone channel is open in policy.json",
            'add "telegram": {"approvers": [YOUR_USER_ID]} (or "ntfy") under "confirm" in policy.json',
        )
    ok = all(r.ok for r in results)
    if wants_json():
        emit_json({"home": str(home), "ok": ok, "results": [_record(r) for r in results]})
    else:
        for r in results:
            click.echo(f"{'✓' if r.ok else '✗'} {r.channel} {r.target}: {r.detail}")
    if not ok:
        raise SystemExit(1)


def _record(result: object) -> dict[str, object]:
    return {name: getattr(result, name) for name in ("channel", "target", "ok", "detail")}


def _read(what: str, from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline()
    return str(click.prompt(what, hide_input=True, err=True))
