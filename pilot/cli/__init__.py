"""The `pilot` command: a thin click group; each command group lives in its own module here."""

from __future__ import annotations

import importlib

import click

# Each module defines `command` (a click.Command or click.Group). Order is the help listing's order.
_COMMAND_MODULES = (
    "serve",
    "policy",
    "sim",
    "keys",
    "token",
    "init",
    "doctor",
    "journal",
    "killswitch",
    "confirm",
    "demo",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pilot")
def main() -> None:
    """Pilot: plan-then-execute trading for AI agents, with refusals that say what would fit."""


for _name in _COMMAND_MODULES:
    main.add_command(importlib.import_module(f"pilot.cli.{_name}").command)
