"""What can go wrong with stored exchange keys. Every message names the fix; none carries a secret.

    KeysError
     ├── MasterKeyError          the master key file is missing, loose, a symlink or malformed
     ├── NoKeyStored             no active key for the environment
     ├── KeyAlreadyStored        `add` while a key is active (use `replace`)
     ├── KeyPermissionsRejected  the key may do more than the allowlist permits
     ├── PermissionCheckFailed   the exchange could not tell what the key may do
     │    └── PermissionCheckUnsupported  the environment does not serve the permission read at all
     ├── KeyUnreadable           the stored ciphertext does not open under this master key and row
     └── InvalidKeyInput         an empty key or secret, or a paper exchange without a URL

Callers branch on `code`, never on the wording. Messages are built from Pilot's own words and from
non-secret values only (file paths, key ids, environment and permission names).
"""

from __future__ import annotations

from pathlib import Path


class KeysError(Exception):
    """Base of every key failure; `code` is stable, `fix` is the next thing a human should do."""

    code = "keys_error"

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem} Fix: {fix}")
        self.problem = problem
        self.fix = fix


class MasterKeyError(KeysError):
    code = "master_key_unusable"

    def __init__(self, path: Path, problem: str, fix: str) -> None:
        super().__init__(f"Master key file {path}: {problem}.", fix)
        self.path = path


class NoKeyStored(KeysError):
    code = "no_key_stored"

    def __init__(self, environment: str) -> None:
        super().__init__(
            f"No API key is stored for {environment}.",
            f"run `pilot keys add --exchange {environment}` and type the key at the prompt.",
        )
        self.environment = environment


class KeyAlreadyStored(KeysError):
    code = "key_already_stored"

    def __init__(self, environment: str, key_id: str) -> None:
        super().__init__(
            f"Key {key_id} is already stored for {environment}.",
            f"run `pilot keys replace --exchange {environment}` to swap it for a new one.",
        )
        self.environment = environment
        self.key_id = key_id


class KeyPermissionsRejected(KeysError):
    code = "key_permissions_rejected"

    def __init__(self, environment: str, disallowed: tuple[str, ...]) -> None:
        super().__init__(
            f"The {environment} key has permissions Pilot does not allow: {', '.join(disallowed)}.",
            "create a key with only Contract Orders and Positions, Spot Trade, or Read-Only ticked, "
            f"then run `pilot keys replace --exchange {environment}` (or `add` for a new one).",
        )
        self.environment = environment
        self.disallowed = disallowed


class PermissionCheckFailed(KeysError):
    code = "key_permission_check_failed"

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

    code = "key_permission_check_unsupported"

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
    code = "key_unreadable"

    def __init__(self, key_id: str) -> None:
        super().__init__(
            f"Key {key_id} does not decrypt with this master key (wrong master key file, or the row was "
            "copied or edited).",
            "point PILOT_MASTER_KEY_FILE at the master key it was stored with, or run `pilot keys replace`.",
        )
        self.key_id = key_id


class InvalidKeyInput(KeysError):
    code = "invalid_key_input"
