"""The documentation as the tests read it: README.md, the front page, and the reference's pages in docs/, in
the order of mkdocs.yml's nav (the order a reader meets them, and the order their command blocks run in)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def page(name: str) -> Path:
    """`README.md`, or the page of docs/ named as mkdocs.yml names it (`policy.md`)."""
    return README if name == "README.md" else DOCS / name


def text(name: str) -> str:
    return page(name).read_text(encoding="utf-8")


def nav() -> list[str]:
    """The pages of mkdocs.yml's nav, in order, as paths under docs/."""

    def pages(entries: list) -> list[str]:
        found = []
        for entry in entries:
            target = next(iter(entry.values())) if isinstance(entry, dict) else entry
            found += pages(target) if isinstance(target, list) else [target]
        return found

    return pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])


def in_reading_order() -> list[Path]:
    """README.md, then every page of the nav."""
    return [README, *(DOCS / name for name in nav())]


def section(name: str, title: str) -> str:
    """The page's section under the heading `title` (any level), up to the next heading of any level."""
    whole = text(name)
    start = re.search(rf"^#+ {re.escape(title)}\n", whole, re.MULTILINE)
    assert start is not None, (name, title)
    rest = whole[start.end() :]
    end = re.search(r"^#+ ", rest, re.MULTILINE)
    return rest[: end.start() if end else len(rest)]
