"""Each command's module is imported when the command runs: every listed name finds its command, and
starting `pilot serve` imports none of the others (nor rich, the console or the demo)."""

from __future__ import annotations

import json
import subprocess
import sys

import click

from pilot.cli import _COMMAND_MODULES, main


def test_every_listed_command_is_found_under_its_own_name() -> None:
    context = click.Context(main)
    names = main.list_commands(context)
    assert len(names) == len(set(names)) == len(_COMMAND_MODULES)
    for name in names:
        command = main.get_command(context, name)
        assert command is not None and command.name == name
    assert main.get_command(context, "no-such-command") is None


def test_the_serve_command_imports_no_other_command_and_nothing_only_they_use() -> None:
    probe = (
        "import sys, json; from pilot.cli import main; import click; "
        "main.get_command(click.Context(main), 'serve'); print(json.dumps(sorted(sys.modules)))"
    )
    loaded = set(
        json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True).stdout)
    )
    others = {
        f"pilot.cli.{name}"
        for name in ("console", "journal", "demo", "sim", "keys", "doctor", "confirm", "evals")
    }
    assert not loaded & others
    assert not {"rich", "pilot.console", "pilot.demo"} & loaded
