"""`pilot serve`: a host other than loopback only with --allow-remote, refused in one line before anything starts."""

from __future__ import annotations

import pytest

from .conftest import pilot

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "pilot.example"])
async def test_a_host_beyond_loopback_without_allow_remote_is_one_line_and_nothing_starts(tmp_path, host):
    home = tmp_path / "home"
    result = await pilot("serve", "--home", str(home), "--transport", "http", "--host", host)
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert not home.exists()  # refused before the home, the store or the paper exchange was opened


@pytest.mark.parametrize("seconds", ["0", "-5", "soon"])
async def test_the_session_idle_time_must_be_a_positive_number_of_seconds(tmp_path, seconds):
    result = await pilot(
        "serve", "--home", str(tmp_path), "--transport", "http", "--session-idle-seconds", seconds
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
