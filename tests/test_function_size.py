"""No function in pilot/ runs over 60 lines, the paper exchange's simulator (pilot/paper/) apart: a long
function hides what each of its parts does and reads, so split it by those parts."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

LIMIT = 60
ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pilot"
EXEMPT = PACKAGE / "paper"


def function_sizes(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int, int]]:
    """(qualified name, line of its `def`, lines) of every function in `tree`: methods and nested ones too.

    A function's lines run from its `def` to its last line; its decorators are not counted.
    """
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = prefix + node.name
            yield name, node.lineno, (node.end_lineno or node.lineno) - node.lineno + 1
            yield from function_sizes(node, name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from function_sizes(node, prefix + node.name + ".")
        else:
            yield from function_sizes(node, prefix)


def measured() -> dict[str, int]:
    """`path:line qualified name` to its lines, for every function in pilot/ outside the simulator."""
    sizes = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(EXEMPT):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = path.relative_to(ROOT).as_posix()
        for name, line, lines in function_sizes(tree):
            sizes[f"{where}:{line} {name}"] = lines
    return sizes


def test_no_function_outside_the_simulator_is_longer_than_60_lines():
    sizes = measured()
    too_long = {where: lines for where, lines in sizes.items() if lines > LIMIT}
    assert not too_long, too_long
    assert any(where.startswith("pilot/console/app.py:") for where in sizes)  # the scan did read the package


def test_a_function_is_counted_from_its_def_to_its_last_line_with_methods_and_nested_functions():
    tree = ast.parse(
        "@decorated\n"
        "@twice\n"
        "def outer():\n"
        "    async def inner():\n"
        "        return 1\n"
        "\n"
        "    return inner\n"
        "class Desk:\n"
        "    def method(self):\n"
        "        pass\n"
    )
    assert list(function_sizes(tree)) == [("outer", 3, 5), ("outer.inner", 4, 2), ("Desk.method", 9, 2)]
