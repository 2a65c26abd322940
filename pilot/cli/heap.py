"""The heap at start-up: the cyclic garbage collector paused while `python -m pilot` imports a command and
builds what it serves, then what start-up built set apart from every later collection.

Start-up allocates a few hundred thousand objects that live as long as the process (modules, classes, the
schemas of every model and tool), and the collector walked all of them again and again while they were
made: a third of what importing Pilot cost on a server's start. `pilot/__main__.py` pauses it first thing;
`pilot serve` settles the heap once it is built (gc.freeze: what start-up made is left out of every later
collection, so none walks it again), and every other command resumes collection once its module is
imported. Only a process that paused it at its entry settles or resumes anything: a caller with the
collector running (a test invoking the CLI in its own process) is left as it is.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Stop collecting until settle() or resume() (called first thing by `python -m pilot`)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def settle() -> None:
    """Set what start-up built apart from later collections, then collect again (if pause() stopped it)."""
    global _paused
    if _paused:
        gc.freeze()
        gc.enable()
        _paused = False


def resume() -> None:
    """Collect again, setting nothing apart (if pause() stopped it)."""
    global _paused
    if _paused:
        gc.enable()
        _paused = False
