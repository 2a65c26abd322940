"""`pilot demo`: a scripted agent against `pilot serve` on the paper exchange, in a temporary home; exit 1 if a step differs."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import anyio
import click
from rich.console import Console

from pilot.cli.output import emit_json, format_option, wants_json
from pilot.demo import DemoRun, run_demo
from pilot.demo.story import EXPECTED_CARDS
from pilot.demo.transcript import format_markdown, format_run


@click.command("demo")
@click.option(
    "--markdown",
    "markdown_path",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Also write the transcript as markdown here (this is how DEMO.md is made).",
)
@click.option("--keep-home", is_flag=True, help="Keep the temporary home afterwards and print where it is.")
@format_option()
def command(markdown_path: Path | None, keep_home: bool, output: str) -> None:
    """Watch an agent get refused, re-plan, ask a human, stop when nothing fits, and meet the kill switch.

    Offline: a real MCP client over stdio to `pilot serve`, whose paper exchange runs on loopback, in a
    temporary home (your current folder is never touched). Exits 1 if any step does not behave as shown.
    """
    home = Path(tempfile.mkdtemp(prefix="pilot-demo-"))
    try:
        run = anyio.run(run_demo, home)
    finally:
        if not keep_home:
            shutil.rmtree(home, ignore_errors=True)
    _report(run, markdown_path, keep_home)


def _report(run: DemoRun, markdown_path: Path | None, keep_home: bool) -> None:
    if wants_json():
        emit_json(run_record(run, keep_home))
    else:
        Console().print(format_run(run))
    if markdown_path is not None:
        markdown_path.write_text(format_markdown(run), encoding="utf-8")
        click.echo(f"wrote {markdown_path}", err=wants_json())
    if keep_home:
        click.echo(
            f"the demo's home is kept: pilot journal --card --last {len(EXPECTED_CARDS)} --home {run.home}",
            err=wants_json(),
        )
    if not run.ok:
        raise SystemExit(1)


def run_record(run: DemoRun, keep_home: bool) -> dict[str, object]:
    """The run as JSON-ready data: whether every step behaved as shown, and each step's failure if any."""
    return {
        "ok": run.ok,
        "seconds": round(run.seconds, 1),
        "home": str(run.home) if keep_home else None,
        "steps": [
            {"number": step.number, "title": step.title, "ok": step.failure is None, "failure": step.failure}
            for step in run.steps
        ],
    }
