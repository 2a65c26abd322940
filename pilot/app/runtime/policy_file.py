"""policy.json read as hostile input: a regular file of at most 64 KiB, never blocking, re-parsed when it changes.

Every way the file can fail (missing, unreadable, a FIFO, a device, a directory, too large, not UTF-8, not a
valid policy) comes out as `PolicyIssue`s with a fix, so the runtime can fall back to the fail-closed policy
(growing orders refused with rule `policy`, reducing ones still allowed) and the CLI can print each problem.

A symlink is followed, and the file it leads to must be a regular file like any other: keeping policy.json in
a repository and linking it into the home is a reasonable thing to do, and refusing links would not stop
anyone who can already write the home.
"""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path

from pilot.core.policy import (
    MAX_POLICY_BYTES,
    LoadedPolicy,
    PolicyInvalid,
    PolicyIssue,
    parse_policy,
    policy_too_large,
)

FILE = "policy.json"  # the path of problems about the file itself rather than a key in it
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_policy_file(path: Path) -> LoadedPolicy | tuple[PolicyIssue, ...]:
    """The policy at `path`, or each reason it cannot be used with its fix. Never raises, never blocks.

    The file is read on every call (a bounded read of a small file) and parsed only when its bytes differ
    from a recent read, so any change is seen, whatever its size and mtime say.
    """
    try:
        return load_policy_file(path)
    except PolicyInvalid as invalid:
        return tuple(invalid.issues)
    # Fail closed: a bug in reading must refuse growing orders, never break reducing ones with a traceback.
    except Exception as error:
        return (
            PolicyIssue(
                FILE,
                f"could not be read ({type(error).__name__})",
                "check it with `pilot policy check`, and report this if the file looks right",
            ),
        )


def load_policy_file(path: Path) -> LoadedPolicy:
    """Read and parse the policy at `path`. Raises PolicyInvalid, with each problem and its fix.

    Every problem foreseen is a PolicyInvalid; any other exception is a bug (read_policy_file turns even that
    into an issue, for callers that must never raise).
    """
    outcome = _parsed(_read_bytes(path))
    if isinstance(outcome, LoadedPolicy):
        return outcome
    raise PolicyInvalid(list(outcome))


@functools.lru_cache(maxsize=8)
def _parsed(data: bytes) -> LoadedPolicy | tuple[PolicyIssue, ...]:
    # Keyed by content: parsing is pure, so equal bytes give an equal answer in any runtime.
    try:
        return _parse_bytes(data)
    except PolicyInvalid as invalid:
        return tuple(invalid.issues)


def _parse_bytes(data: bytes) -> LoadedPolicy:
    if len(data) > MAX_POLICY_BYTES:
        raise PolicyInvalid([policy_too_large(f"{len(data)} bytes")])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise PolicyInvalid(
            [PolicyIssue(FILE, f"is not UTF-8 text (byte {error.start})", "save it as UTF-8")]
        ) from None
    return parse_policy(text)


def _read_bytes(path: Path) -> bytes:
    """At most MAX_POLICY_BYTES + 1 bytes of the regular file at `path`; PolicyInvalid for anything else."""
    try:
        # Checked before opening, since opening a FIFO or a device can have effects; O_NONBLOCK then keeps a
        # FIFO swapped in between the two calls from blocking the open.
        _refuse_unless_regular(path, os.stat(path))
        descriptor = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        raise _unopenable(path, error) from None
    try:
        info = os.fstat(descriptor)
        _refuse_unless_regular(path, info)  # what was opened is what counts
        if info.st_size > MAX_POLICY_BYTES:
            raise PolicyInvalid([policy_too_large(f"{info.st_size} bytes")])
        return _bounded_read(descriptor)
    except OSError as error:
        raise _unopenable(path, error) from None
    finally:
        os.close(descriptor)


def _bounded_read(descriptor: int) -> bytes:
    # One byte past the limit is enough to know the file grew beyond it after fstat.
    chunks: list[bytes] = []
    left = MAX_POLICY_BYTES + 1
    while left > 0:
        chunk = os.read(descriptor, left)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _refuse_unless_regular(path: Path, info: os.stat_result) -> None:
    if stat.S_ISREG(info.st_mode):
        return
    kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
    target = os.path.realpath(path)
    where = f" ({target})" if target != os.path.abspath(path) else ""
    raise PolicyInvalid(
        [
            PolicyIssue(
                FILE,
                f"is {kind}{where}; only a regular file is read",
                "replace it with a regular file (a symlink to a regular file is fine)",
            )
        ]
    )


def _unopenable(path: Path, error: OSError) -> PolicyInvalid:
    if isinstance(error, FileNotFoundError):
        issue = PolicyIssue(FILE, f"not found at {path}", "create it with `pilot init`")
    elif isinstance(error, PermissionError):
        issue = PolicyIssue(
            FILE,
            f"cannot be read at {path} (permission denied)",
            "make it readable by the user running Pilot",
        )
    else:
        reason = error.strerror or type(error).__name__
        issue = PolicyIssue(FILE, f"cannot be read at {path} ({reason})", "check the path and the file")
    return PolicyInvalid([issue])
