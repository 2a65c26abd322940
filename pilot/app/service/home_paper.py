"""The home's paper exchange as every `pilot serve` on the home shares it: found if one runs, else started.

It runs in a process of its own (`pilot sim --home HOME --idle-exit IDLE_SECONDS`, in a session of its own,
so a client that stops its server's process group leaves it running), holding the home's paper state lock
and writing there where it listens (pilot.paper.state). A server holds a share of it while it runs
(pilot.paper.sharing.UserHold); the exchange stops IDLE_SECONDS after the last share is given back, so a
client restarting its server finds the same exchange, and nothing is left running long after the last
client. Two servers starting at once both may start one: the state lock lets one serve, the other's
process stops at once, and both servers attach to the one that serves.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio

from pilot.app.runtime.runtime import Home
from pilot.paper.lock import read_holder, serving_url
from pilot.paper.sharing import UserHold, log_path, rotate_log

IDLE_SECONDS = 60
START_SECONDS = 60  # a busy machine may take this long to import Pilot and load the account
_STARTED: list[subprocess.Popen[bytes]] = []


class HomeExchangeFailed(Exception):
    """The home's paper exchange could not be started; the message is what it said, with its fix."""


async def attach_home_exchange(home: Path, scenario: Path | None, stack: contextlib.AsyncExitStack) -> str:
    """The URL of the home's paper exchange, started if none serves the home; a share held until `stack`
    closes.

    Raises:
        HomeExchangeFailed: it stopped without serving (an unreadable account, a bad scenario), or took
            longer than START_SECONDS.
    """
    state = Home(home).paper_state_path
    hold = UserHold(state)
    await anyio.to_thread.run_sync(hold.acquire)
    stack.callback(hold.release)
    url = serving_url(state)
    if url is not None:
        return url
    return await anyio.to_thread.run_sync(_start_and_wait, home, scenario)


def _start_and_wait(home: Path, scenario: Path | None) -> str:
    state = Home(home).paper_state_path
    log = log_path(state)
    rotate_log(log)
    process = _start(home, scenario, log)
    deadline = time.monotonic() + START_SECONDS
    pause = threading.Event()
    while (url := serving_url(state)) is None:
        if process.poll() is not None and not _another_starting(state, process.pid):
            raise HomeExchangeFailed(f"the home's paper exchange did not start: {_last_line(log)}")
        if time.monotonic() > deadline:
            raise HomeExchangeFailed(
                f"the home's paper exchange did not start within {START_SECONDS} s (see {log})"
            )
        pause.wait(0.05)
    return url


def _another_starting(state: Path, exited: int) -> bool:
    """Whether a live process other than the one that stopped holds the state lock (it won the race to
    serve, and says where it listens in a moment)."""
    pid = read_holder(state).get("pid")
    if not isinstance(pid, int) or pid == exited:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _start(home: Path, scenario: Path | None, log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "pilot", "sim", "--home", str(home), "--idle-exit", str(IDLE_SECONDS)]
    if scenario is not None:
        command += ["--scenario", str(scenario)]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as output:
        process = subprocess.Popen(  # our own interpreter and arguments
            command,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,  # a client stopping its server's process group leaves it running
            close_fds=True,  # the server's share (UserHold) must not be held by the exchange too
        )
    _STARTED.append(process)  # kept, so it is not reported as a child dropped while running
    return process


def _last_line(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return lines[-1] if lines else "(nothing said)"
