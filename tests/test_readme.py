"""The README's commands that run offline, run as a new user would: in a shell, with `pilot` on the PATH and
`~` a fresh home directory. A block is run when the line before it says so
(`<!-- offline: tests/test_readme.py runs this block -->`); each must exit 0, in the README's order."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
MARK = "<!-- offline: tests/test_readme.py runs this block -->"
BLOCK = re.compile(re.escape(MARK) + r"\n```bash\n(.*?)\n```", re.DOTALL)


def offline_blocks() -> list[str]:
    return BLOCK.findall(README.read_text(encoding="utf-8"))


@pytest.fixture
def shell_env(tmp_path: Path, user_home: Path) -> dict[str, str]:
    """A PATH whose `pilot` is this checkout's (as `pipx install .` would put one there) and HOME as `~`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "pilot"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pilot "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PILOT_")}
    return {**environment, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(user_home)}


def test_the_readme_marks_its_offline_blocks() -> None:
    blocks = offline_blocks()
    assert len(blocks) >= 3 and README.read_text(encoding="utf-8").count(MARK) == len(blocks)
    assert any("pilot init" in block for block in blocks) and any("initialize" in block for block in blocks)


def test_every_offline_block_runs_in_order_and_exits_0(shell_env: dict[str, str], user_home: Path) -> None:
    outputs = []
    for block in offline_blocks():
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block],
            env=shell_env,
            cwd=user_home,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, f"{block}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        assert "Traceback" not in done.stderr, block
        outputs.append(done.stdout)
    joined = "\n".join(outputs)
    assert '"serverInfo"' in joined  # the smoke test's initialize answer
    assert "pilot_" in joined  # the token printed once
    assert (user_home / "pilot-home" / "journal" / "pilot.db").exists()
