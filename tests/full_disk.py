"""A full disk under a Pilot home: a small tmpfs mounted for the test (root only; skipped with the reason
elsewhere), filled with a file of zeros and freed by deleting it: the `disk` fixture (tests/conftest.py). Used where Pilot's own database must fail
for real: the tools' answers (tests/app/test_store_faults.py) and the console's pages (tests/console).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


class Disk:
    """A small tmpfs: fill it to the last byte, free it again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.filler = path / "filler"

    def fill(self) -> None:
        descriptor = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            for chunk in (1 << 20, 1 << 16, 1 << 12, 1 << 9, 1):
                with contextlib.suppress(OSError):
                    while True:
                        os.write(descriptor, b"\0" * chunk)
        finally:
            os.close(descriptor)
        with pytest.raises(OSError) as full:
            (self.path / "probe").write_bytes(b"\0" * 4096)
        assert full.value.errno == errno.ENOSPC

    def free(self) -> None:
        self.filler.unlink()
        (self.path / "probe").unlink(missing_ok=True)


@contextlib.contextmanager
def small_disk(tmp_path: Path) -> Iterator[Disk]:
    """A tmpfs of 8 MB mounted under `tmp_path` for as long as the block runs (the `disk` fixture)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a full disk is simulated on a small tmpfs, which only root can mount")
    path = tmp_path / "disk"
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(path)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield Disk(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
