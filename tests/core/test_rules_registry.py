"""The checks are registered once (pilot.core.rules.registry): every list of them is derived from that."""

from __future__ import annotations

import importlib
import inspect

import pilot.core.rules
from pilot.core.policy import Policy
from pilot.core.rules import CHECKS, REGISTRY, SIZE_CHECKS
from pilot.core.rules.registry import PRELUDE, documented_order

FAMILIES = ("admission", "grid", "caps", "acceptance", "loss", "pretrade", "protective")


def test_the_package_docstring_lists_the_checks_in_the_order_they_run():
    # On a failure: paste documented_order() into pilot/core/rules/__init__.py's docstring.
    assert "\n" + documented_order() + "\n" in (pilot.core.rules.__doc__ or "")
    assert all(len(line) <= 110 for line in documented_order().splitlines())


def test_every_check_of_every_family_is_registered_once_and_lives_in_its_family():
    defined = []
    for family in FAMILIES:
        module = importlib.import_module(f"pilot.core.rules.{family}")
        defined += [
            function
            for name, function in inspect.getmembers(module, inspect.isfunction)
            if name.startswith("check_") and function.__module__ == module.__name__
        ]
    registered = [*PRELUDE, *CHECKS]
    assert len(set(registered)) == len(registered)
    assert set(defined) == set(registered)


def test_the_size_checks_keep_the_order_of_the_checks():
    assert [check for check in CHECKS if check in SIZE_CHECKS] == list(SIZE_CHECKS)


def test_the_fields_a_check_judges_are_policy_fields():
    fields = set(Policy.model_fields)
    for entry in REGISTRY:
        assert set(entry.when) <= fields, entry.check.__name__
