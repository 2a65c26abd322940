"""`pipx install .` / `uv tool install .` give a working `pilot`: every package and every data file the code
reads is in what pyproject.toml packages, and the entry point is the CLI. Building the wheel needs the build
backend from a package index, which tests never reach, so what the build would take is read here from
pyproject.toml itself."""

from __future__ import annotations

import fnmatch
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
NOT_SHIPPED = {".py", ".pyc", ".md"}  # code is packaged as code; docs are read on GitHub, never at runtime


def _packages_on_disk() -> list[str]:
    return sorted(
        ".".join(path.relative_to(ROOT).parent.parts)
        for path in (ROOT / "pilot").rglob("*.py")
        if "__pycache__" not in path.parts
    )


def test_every_folder_of_code_is_a_package_the_build_finds() -> None:
    patterns = SETUPTOOLS["packages"]["find"]["include"]
    for package in sorted(set(_packages_on_disk())):
        folder = ROOT.joinpath(*package.split("."))
        assert (folder / "__init__.py").exists(), f"{package} has no __init__.py: find() would skip it"
        assert any(fnmatch.fnmatch(package, pattern) for pattern in patterns), package


def test_every_data_file_is_package_data() -> None:
    data = SETUPTOOLS["package-data"]
    for path in (ROOT / "pilot").rglob("*"):
        if path.is_dir() or path.suffix in NOT_SHIPPED or "__pycache__" in path.parts:
            continue
        package_dir = next(parent for parent in path.parents if (parent / "__init__.py").exists())
        package = ".".join(package_dir.relative_to(ROOT).parts)
        relative = str(path.relative_to(package_dir))
        assert any(fnmatch.fnmatch(relative, glob) for glob in data.get(package, [])), (package, relative)


def test_the_pilot_command_is_the_cli_and_python_dash_m_pilot_too() -> None:
    assert PYPROJECT["project"]["scripts"] == {"pilot": "pilot.cli:main"}
    [installed] = [point for point in entry_points(group="console_scripts") if point.name == "pilot"]
    assert installed.value == "pilot.cli:main" and isinstance(installed.load(), click.Group)
    shown = subprocess.run([sys.executable, "-m", "pilot", "--version"], capture_output=True, text=True)
    assert shown.returncode == 0 and shown.stdout.startswith("pilot, version ")
    assert PYPROJECT["project"]["requires-python"] == ">=3.11"
