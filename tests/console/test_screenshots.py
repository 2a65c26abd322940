"""docs/console/*.png are what docs/console/screenshots.py writes: every page it takes at both widths (1280 and
390 px), none left over from an older script, and each one docs/console.md shows exists. What the images show
is held by the browser tests at the same widths (test_overview.py, test_approval_page.py, test_pages.py)."""

from __future__ import annotations

import ast
import re
import struct
from pathlib import Path

from tests.pages import DOCS, text

FOLDER = DOCS / "console"


def script_constants() -> dict[str, object]:
    """The script's SIZES, PAGES and AFTER_THE_KILL_SWITCH, read from its source (it is not imported)."""
    tree = ast.parse((FOLDER / "screenshots.py").read_text(encoding="utf-8"))
    wanted = {"SIZES", "PAGES", "AFTER_THE_KILL_SWITCH"}
    found = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in wanted
        ):
            found[node.targets[0].id] = ast.literal_eval(node.value)
    assert set(found) == wanted
    return found


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", path
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def test_every_page_is_in_the_docs_at_both_widths_and_nothing_else() -> None:
    constants = script_constants()
    sizes: dict[str, dict[str, int]] = constants["SIZES"]  # type: ignore[assignment]
    names = [*constants["PAGES"], *constants["AFTER_THE_KILL_SWITCH"]]  # type: ignore[misc]
    expected = {f"{name}-{size}.png" for name in names for size in sizes}
    assert {path.name for path in FOLDER.glob("*.png")} == expected
    for name in expected:
        size = name.rsplit("-", 1)[1].removesuffix(".png")
        width, height = png_size(FOLDER / name)
        assert width == sizes[size]["width"], name
        assert height >= sizes[size]["height"] if size == "phone" else height == sizes[size]["height"], name


def test_the_console_page_shows_images_that_exist() -> None:
    shown = re.findall(r"\]\((console/[^)]+\.png)\)", text("console.md"))
    assert shown and all((DOCS / image).exists() for image in shown)
    assert {"console/overview-phone.png", "console/approval-phone.png"} <= set(shown)
