"""The exception tree drawn in pilot/core/errors.py is the real one, and every code a failure carries is declared.

The drawing is read line by line (name, defining module, parent by indentation) and compared with the classes
found by importing every module of the package: a class added without its line, drawn under the wrong
parent, or moved to another module fails here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pilot
from pilot.core import errors
from pilot.core.errors import ErrorCode, ExplainedError

_LINE = re.compile(r"^    (?P<tree>[ │├└─]*)(?P<name>[\w.]+)(?:\s+(?P<module>[\w.]+)\s+\S.*)?$")


def drawn() -> dict[str, tuple[str, str | None]]:
    """Each drawn class by name: (its parent's name, its module under pilot/); a root's module is None."""
    text = errors.__doc__ or ""
    block = text[text.index("\n    Exception\n") + 1 :]
    found: dict[str, tuple[str, str | None]] = {}
    parents: list[tuple[int, str]] = []  # (column, name) of the open branches
    for line in block.rstrip().splitlines():
        match = _LINE.match(line)
        assert match, f"not a line of the tree: {line!r}"
        column, name = len(match["tree"]), match["name"]
        while parents and parents[-1][0] >= column:
            parents.pop()
        if parents:
            assert name not in found, f"{name} is drawn twice"
            found[name] = (parents[-1][1], match["module"])
        parents.append((column, name))
    return found


def defined() -> dict[str, tuple[str, str | None]]:
    """Each public exception class defined at a module's top level in pilot: (its base's name, its module)."""
    found: dict[str, tuple[str, str | None]] = {}
    for info in pkgutil.walk_packages(pilot.__path__, "pilot."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if not (inspect.isclass(value) and issubclass(value, BaseException)) or name.startswith("_"):
                continue
            if value.__module__ != module.__name__:
                continue
            (base,) = value.__bases__  # the drawing has no room for two parents
            parent = base.__name__ if base.__module__.startswith("pilot") else _outside(base)
            assert name not in found, f"two exception classes named {name}"
            found[name] = (parent, module.__name__.removeprefix("pilot."))
    return found


def _outside(base: type) -> str:
    module = base.__module__.split(".")[0]
    return base.__name__ if module == "builtins" else f"{module}.{base.__name__}"


def test_the_drawn_tree_is_the_class_hierarchy():
    assert drawn() == defined()


def test_every_explained_error_carries_a_declared_code():
    def subclasses(cls: type) -> set[type]:
        return {cls} | {sub for child in cls.__subclasses__() for sub in subclasses(child)}

    for info in pkgutil.walk_packages(pilot.__path__, "pilot."):
        importlib.import_module(info.name)
    for cls in subclasses(ExplainedError):
        assert isinstance(cls.code, ErrorCode), cls


def test_a_code_is_its_own_value_in_lower_case():
    """Released values never change: each member is named after its value, so renaming one shows."""
    for code in ErrorCode:
        assert code.name.lower() == code.value
