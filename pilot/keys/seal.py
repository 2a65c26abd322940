"""The journal key: a 256-bit file outside the home whose HMAC seals journal entries and plans.

Someone who can write the home's database but cannot read this file cannot add, change or rehash an entry
without `pilot journal verify` seeing it. The file lives at PILOT_JOURNAL_KEY_FILE (default
`~/.config/pilot/journal.key`), beside the vault's master key and under the same rules (pilot.keys.key_file).
It is created when a database that depends on no key is opened (the first open of a new home, or of a home
written before sealing), and never again: once a journal records its key, a missing, unsafe or different
file is an error with its fix, never a silent new key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pilot.core.errors import ErrorCode
from pilot.keys.errors import KeysError
from pilot.keys.key_file import KeyFileKind, create_key_file, read_key_file, refuse_inside_home

JOURNAL_KEY_ENV = "PILOT_JOURNAL_KEY_FILE"
DEFAULT_JOURNAL_KEY_FILE = Path("~/.config/pilot/journal.key")


class JournalKeyError(KeysError):
    code = ErrorCode.JOURNAL_KEY_UNUSABLE

    def __init__(self, path: Path, problem: str, fix: str) -> None:
        super().__init__(f"Journal key file {path}: {problem}.", fix)
        self.path = path


JOURNAL_KEY_FILE = KeyFileKind("journal key", JOURNAL_KEY_ENV, DEFAULT_JOURNAL_KEY_FILE, JournalKeyError)

_MISSING = (
    "not found, but this journal's entries are sealed with it",
    f"restore the file from your backup, or set {JOURNAL_KEY_ENV} to where it is. Without it this journal "
    "can no longer be verified or extended: keep it as a record and start a new home with `pilot init`.",
)


@dataclass(frozen=True, slots=True)
class JournalKey:
    """The key's bytes, where they came from, and whether this call created the file."""

    path: Path
    created: bool
    secret: bytes = field(repr=False)


def journal_key_path(environ: Mapping[str, str] = os.environ) -> Path:
    """Return the journal key file's path: PILOT_JOURNAL_KEY_FILE if set, else the per-user default."""
    return JOURNAL_KEY_FILE.path(environ)


def load_journal_key(home: Path, *, may_create: bool) -> JournalKey:
    """Read the journal key for the database of `home`, creating the file only when `may_create` and absent.

    `may_create` is the caller's word that no journal entry depends on a key yet. A file that another
    process creates at the same moment is read, not replaced.

    Raises:
        JournalKeyError: the file is inside the home, missing while entries depend on it, or unsafe.
    """
    path = journal_key_path()
    refuse_inside_home(JOURNAL_KEY_FILE, path, home)
    if may_create and not os.path.lexists(path):
        try:
            return JournalKey(path, True, create_key_file(path))
        except FileExistsError:
            pass  # another process created it first: use theirs
    return JournalKey(path, False, read_key_file(JOURNAL_KEY_FILE, path, missing=_MISSING))


def mismatch(key: JournalKey, recorded_id: str, found_id: str) -> JournalKeyError:
    """The error for a key file that is not the one the journal was sealed with."""
    return JournalKeyError(
        key.path,
        f"is key {found_id}, but this journal was sealed with key {recorded_id}",
        f"set {JOURNAL_KEY_ENV} to the key file this home was created with (restore it from your backup); "
        "a different key would make every entry look forged.",
    )
