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

# The host a live key's command names in a fix: the venue's global one; a regional site's user swaps in theirs.
FIX_HOSTS = {Environment.BYBIT: "api.bybit.com", Environment.OKX: "www.okx.com"}


def keys_command(verb: str, environment: str, host: str | None = None) -> str:
    """`pilot keys VERB` for `environment` as a human runs it: a live one's names a host (it has no default):
    `host` (the one the key was given), else the venue's global one, which a regional site's user swaps for
    theirs."""
    command = f"pilot keys {verb} --exchange {environment}"
    if environment == Environment.PAPER:  # its address is a --url (`host` carries it): it has no default
        return f"{command} --url {host}" if host else command
    if environment not in FIX_HOSTS:
        return command
    return f"{command} --host {host or FIX_HOSTS[Environment(environment)]}"


def _host_note(environment: str) -> str:
    """Where a regional site's user finds their host, for a fix that names the global one."""
    if environment not in FIX_HOSTS:
        return ""
    if environment == Environment.BYBIT:
        return " (on a regional Bybit site, its host instead: docs/going-live.md lists them)"
    return (
        f" (on another OKX site, its host instead: {_other_hosts(environment, FIX_HOSTS[Environment.OKX])})"
    )


def _other_hosts(environment: str, host: str, verb: str | None = None) -> str:
    """The live hosts of `environment` other than `host`, each with whom it is for: as `--host H`, or with
    `verb` as the whole `pilot keys VERB` command naming it."""
    from pilot.exchange.adapters import live_host_notes

    def named(other: str) -> str:
        return keys_command(verb, environment, other) if verb else f"--host {other}"

    notes = live_host_notes(environment)
    return "; ".join(f"`{named(other)}` for {who}" for other, who in notes.items() if other != host)


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

    def __init__(self, environment: str, key_id: str, host: str | None = None) -> None:
        super().__init__(
            f"Key {key_id} is already stored for {environment}.",
            f"run `{keys_command('replace', environment, host)}` to swap it for a new one.",
        )
        self.environment = environment
        self.key_id = key_id


class KeyPermissionsRejected(KeysError):
    code = ErrorCode.KEY_PERMISSIONS_REJECTED

    def __init__(self, environment: str, disallowed: tuple[str, ...], host: str | None = None) -> None:
        note = "" if host else _host_note(environment)
        super().__init__(
            f"The {environment} key is refused: {', '.join(disallowed)}.",
            f"{_least_privilege(environment, disallowed)}, "
            f"then run `{keys_command('replace', environment, host)}` (or `add` for a new one){note}.",
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


class KeyRefused(PermissionCheckFailed):
    """The venue refused the key itself when asked what it may do (OKX's codes in
    pilot.exchange.okx.error_codes.KEY_REFUSALS): `code` names the cause, the fix the one thing to change.

    `verb` is the `pilot keys` command that was run (add, replace), None for a stored key's check; `host` the
    live host the key was given. Nothing is stored, and a stored key refused so is not used until a check
    passes.
    """

    def __init__(
        self, environment: str, code: ErrorCode, venue_code: int, *, host: str | None, verb: str | None
    ) -> None:
        venue = Environment(environment).venue_name
        cause, fix = _REFUSALS[code](environment, host or FIX_HOSTS.get(Environment(environment), ""), verb)
        KeysError.__init__(self, f"{venue} refused the {environment} key (code {venue_code}): {cause}.", fix)
        self.code = code
        self.environment = environment
        self.venue_code = venue_code
        self.host = host


def _again(environment: str, host: str, verb: str | None) -> str:
    """The command that stores the key once fixed: the one that was run, or for a stored key `replace`."""
    if verb:
        return f"run `{keys_command(verb, environment, host or None)}` again"
    return f"store it again with `{keys_command('replace', environment, host or None)}`"


_DEMO_API_PAGE = "OKX's demo trading API page (Trade > Demo trading > Personal center > Demo Trading API)"


# Where a key for each of Bybit's practice environments is made (a key works only where it was made).
_BYBIT_KEY_PAGES = {
    Environment.BYBIT_DEMO: "Bybit's demo trading (switch the account to Demo Trading, then API management)",
    Environment.BYBIT_TESTNET: "testnet.bybit.com's API management page",
    Environment.PAPER: "the paper exchange: the key and secret it was started with, as pilot sim printed them",
}


def _unknown_on_host(environment: str, host: str, verb: str | None) -> tuple[str, str]:
    if Environment(environment).exchange != "okx":
        return _bybit_unknown(environment, host, verb)
    again = _again(environment, host, verb)
    if not Environment(environment).live:
        return (
            "its demo trading at www.okx.com knows no such key (one made on another OKX site, or deleted)",
            f"make a key on www.okx.com, on {_DEMO_API_PAGE}, then {again}",
        )
    elsewhere = _other_hosts(environment, host, verb or "replace")
    return (
        f"no such key is known at {host}: a key is served only by the host of the OKX site it was made on "
        "(or it was deleted)",
        f"name the host of the OKX site your account is on: {elsewhere}; if it is {host}'s, check on OKX's "
        f"API page that the key still exists (or make a new one), then {again}",
    )


def _bybit_unknown(environment: str, host: str, verb: str | None) -> tuple[str, str]:
    """Bybit's 10003: the key is not this environment's (mainnet, testnet and demo trading each have their
    own keys), not this site's host's, or mistyped or deleted."""
    again = _again(environment, host, verb)
    if environment == Environment.PAPER:
        return (
            "the paper exchange knows no such key (mistyped, or another exchange's)",
            f"use {_BYBIT_KEY_PAGES[Environment.PAPER]}, then {again}",
        )
    if not Environment(environment).live:
        return (
            f"{environment} knows no such key: a key works only in the environment it was made in "
            "(mainnet, testnet, demo trading), or it was mistyped or deleted",
            f"make a key on {_BYBIT_KEY_PAGES[Environment(environment)]}, then {again}. A mainnet key "
            "belongs in a live home: `pilot init --live --home NEW_FOLDER` (docs/going-live.md)",
        )
    elsewhere = _other_hosts(environment, host, verb or "replace")
    return (
        f"no such key is known at {host}: a key works only in the environment it was made in and, on mainnet, "
        "on the host of the Bybit site its account is on (or it was mistyped or deleted)",
        f"name the host of the Bybit site your account is on: {elsewhere}; if it is {host}'s, check on Bybit's "
        f"API management page that the key exists, then {again}. A demo or testnet key belongs in a practice "
        "home: `pilot keys add --exchange bybit-demo --home PRACTICE_HOME`",
    )


def _wrong_environment(environment: str, host: str, verb: str | None) -> tuple[str, str]:
    again = _again(environment, host, verb)
    if not Environment(environment).live:
        return (
            "it is a real-account key, and okx-demo is OKX's demo trading, which takes only a key made there",
            f"make a key on {_DEMO_API_PAGE} and {again}. A real-account key belongs in a live OKX home: "
            "`pilot init --live --exchange okx --home NEW_FOLDER`, then "
            f"`{keys_command('add', Environment.OKX)}` there (docs/going-live.md)",
        )
    return (
        "it is a demo trading key, and okx is OKX's real account, which takes only a key made there",
        f"make a key on your real account's API page (read and trade, bound to this machine's IP) and {again}. "
        "A demo key belongs in a practice home: `pilot keys add --exchange okx-demo --home PRACTICE_HOME`",
    )


def _ip_not_allowed(environment: str, host: str, verb: str | None) -> tuple[str, str]:
    # A stored key needs nothing stored again: the next check (a start, a server's own timer) passes.
    again = (
        _again(environment, host, verb) if verb else "start again (a running server reads it again itself)"
    )
    return (
        "this machine's public IP address is not on the key's IP list",
        f"on {Environment(environment).venue_name}'s API page, edit the key and add this machine's public IP "
        f"address to its IP list, then {again}",
    )


def _passphrase_wrong(environment: str, host: str, verb: str | None) -> tuple[str, str]:
    again = _again(environment, host, verb)
    return (
        "the passphrase typed is not the one chosen when the key was made",
        f"{again} and type the key's passphrase (the one chosen with the key, not the account's password); "
        "a forgotten passphrase cannot be shown again: make a new key",
    )


def _invalid(environment: str, host: str, verb: str | None) -> tuple[str, str]:
    again = _again(environment, host, verb)
    return (
        "the API key typed is not one it issued (mistyped, cut short, or with something around it)",
        f"copy the API key again from {Environment(environment).venue_name}'s API page and {again}",
    )


def _secret_wrong(environment: str, host: str, verb: str | None) -> tuple[str, str]:
    again = _again(environment, host, verb)
    return (
        "the requests signed with the secret typed do not verify: it is not this key's secret",
        f"{again} with the key's secret (shown once, when the key was made: if it is lost, make a new key)",
    )


_REFUSALS = {
    ErrorCode.KEY_UNKNOWN_ON_HOST: _unknown_on_host,
    ErrorCode.KEY_WRONG_ENVIRONMENT: _wrong_environment,
    ErrorCode.KEY_IP_NOT_ALLOWED: _ip_not_allowed,
    ErrorCode.KEY_PASSPHRASE_WRONG: _passphrase_wrong,
    ErrorCode.KEY_INVALID: _invalid,
    ErrorCode.KEY_SECRET_WRONG: _secret_wrong,
}


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
