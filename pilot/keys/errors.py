"""What can go wrong with stored exchange keys. Every message names the fix; none carries a secret.

The classes are drawn with every other exception Pilot defines in `pilot/core/errors.py`.

Callers branch on `code`, never on the wording. Messages are built from Pilot's own words and from
non-secret values only (file paths, key ids, environment and permission names).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pilot.core.errors import ErrorCode, ExplainedError
from pilot.keys.environments import Environment
from pilot.keys.permissions import LEAST_PRIVILEGE, fixes, okx_fixes

# The host a mainnet key's command names in a fix: Bybit's global one; a regional site's user swaps in theirs.
MAINNET_FIX_HOST = "api.bybit.com"


def keys_command(verb: str, environment: str) -> str:
    """`pilot keys VERB` for `environment` as a human runs it: mainnet's names a host (it has no default),
    Bybit's global one, which a regional site's user swaps for theirs."""
    host = f" --host {MAINNET_FIX_HOST}" if environment == Environment.BYBIT else ""
    return f"pilot keys {verb} --exchange {environment}{host}"


def _host_note(environment: str) -> str:
    if environment != Environment.BYBIT:
        return ""
    return " (on a regional Bybit site, its host instead: docs/going-live.md lists them)"


class KeysError(ExplainedError):
    """Base of every key failure; `code` is stable, `fix` is the next thing a human should do.
    `passes_within`: a failure Pilot clears on its own timer (the venue's countdown not yet renewed), so
    that an agent refused for it waits that long and calls again rather than stopping for a human."""

    code = ErrorCode.KEYS_ERROR
    passes_within: timedelta | None = None

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem} Fix: {fix}", problem, fix)


class MasterKeyError(KeysError):
    code = ErrorCode.MASTER_KEY_UNUSABLE

    def __init__(self, path: Path, problem: str, fix: str) -> None:
        super().__init__(f"Master key file {path}: {problem}.", fix)
        self.path = path


class NoKeyStored(KeysError):
    code = ErrorCode.NO_KEY_STORED

    def __init__(self, environment: str) -> None:
        super().__init__(
            f"No API key is stored for {environment}.",
            f"run `{keys_command('add', environment)}` and type the key at the prompt{_host_note(environment)}.",
        )
        self.environment = environment


class KeyAlreadyStored(KeysError):
    code = ErrorCode.KEY_ALREADY_STORED

    def __init__(self, environment: str, key_id: str) -> None:
        super().__init__(
            f"Key {key_id} is already stored for {environment}.",
            f"run `{keys_command('replace', environment)}` to swap it for a new one.",
        )
        self.environment = environment
        self.key_id = key_id


class KeyPermissionsRejected(KeysError):
    code = ErrorCode.KEY_PERMISSIONS_REJECTED

    def __init__(self, environment: str, disallowed: tuple[str, ...]) -> None:
        super().__init__(
            f"The {environment} key is refused: {', '.join(disallowed)}.",
            f"{_least_privilege(environment, disallowed)}, "
            f"then run `{keys_command('replace', environment)}` (or `add` for a new one){_host_note(environment)}.",
        )
        self.environment = environment
        self.disallowed = disallowed


class PermissionCheckFailed(KeysError):
    code = ErrorCode.KEY_PERMISSION_CHECK_FAILED

    def __init__(self, environment: str, reason: str) -> None:
        super().__init__(
            f"Could not read the key's permissions from {environment}: {reason}.",
            "check that the key and secret belong to this environment and that the exchange is "
            "reachable, then try again. A key whose permissions cannot be read is not used.",
        )
        self.environment = environment


class PermissionCheckUnsupported(PermissionCheckFailed):
    """The environment does not answer the permission read (/v5/user/query-api): bybit-demo answers
    endpoints its demo trading does not serve with retCode 10032 (demo.mdx lists the ones it serves).

    Trying again will not help, and the key is not used: Pilot never trades with a key whose permissions
    it could not read.
    """

    code = ErrorCode.KEY_PERMISSION_CHECK_UNSUPPORTED

    def __init__(self, environment: str) -> None:
        KeysError.__init__(
            self,
            f"{environment} does not let Pilot read what this key may do: the permission read "
            "(/v5/user/query-api) is not among the endpoints it serves (retCode 10032), so the key is "
            "not used.",
            "trade on bybit-testnet, which answers the check (`pilot keys add --exchange bybit-testnet`), "
            "or on the paper exchange (`pilot serve --exchange paper`, no key needed). If Bybit starts "
            f"serving the read on {environment}, `pilot keys add --exchange {environment}` works as it is.",
        )
        self.environment = environment


class KeyUnreadable(KeysError):
    code = ErrorCode.KEY_UNREADABLE

    def __init__(self, key_id: str) -> None:
        super().__init__(
            f"Key {key_id} does not decrypt with this master key (wrong master key file, or the row was "
            "copied or edited).",
            "point PILOT_MASTER_KEY_FILE at the master key it was stored with, or run `pilot keys replace`.",
        )
        self.key_id = key_id


class InvalidKeyInput(KeysError):
    code = ErrorCode.INVALID_KEY_INPUT


def _least_privilege(environment: str, disallowed: tuple[str, ...]) -> str:
    """What to change on the venue of `environment` for a key Pilot accepts: on Bybit, the boxes to untick
    (and a live key's other fixes) by name."""
    try:
        venue = Environment(environment).exchange
    except ValueError:
        venue = "bybit"
    if venue == "okx":
        return okx_fixes(disallowed)
    if venue != "bybit":
        return LEAST_PRIVILEGE[venue]
    return (
        f"on Bybit's API management page, {fixes(disallowed)} (a key with only Contract Orders and "
        "Positions and Spot Trade ticked fits)"
    )
