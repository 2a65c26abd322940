"""The documented commands that run offline, run as a new user would: in a shell, with `pilot` on the PATH and
`~` a fresh home directory. A block of README.md or of a page in docs/ is run when the line before it says so
(`<!-- offline: tests/test_readme.py runs this block -->`); each must exit 0, in reading order (README.md,
then mkdocs.yml's nav). Then the counts, tables and claims the pages state, held to the code, and the front
page held to being one."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import click

from pilot.core.errors import ErrorCode
from tests.pages import DOCS, README, ROOT, in_reading_order, nav, section, text

MARK = "<!-- offline: tests/test_readme.py runs this block -->"
BLOCK = re.compile(re.escape(MARK) + r"\n```bash\n(.*?)\n```", re.DOTALL)


def offline_blocks() -> list[str]:
    return [block for path in in_reading_order() for block in BLOCK.findall(path.read_text(encoding="utf-8"))]


def test_the_pages_mark_their_offline_blocks() -> None:
    blocks = offline_blocks()
    marks = sum(path.read_text(encoding="utf-8").count(MARK) for path in in_reading_order())
    assert len(blocks) >= 3 and marks == len(blocks)
    assert "pilot init" in blocks[0] and any("initialize" in block for block in blocks)


def test_every_offline_block_runs_in_order_and_exits_0(shell_env: dict[str, str], user_home: Path) -> None:
    outputs = []
    for block in offline_blocks():
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block],
            env=shell_env,
            cwd=user_home,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, f"{block}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        assert "Traceback" not in done.stderr, block
        outputs.append(done.stdout)
    joined = "\n".join(outputs)
    assert '"serverInfo"' in joined  # the smoke test's initialize answer
    assert "pilot_" in joined  # the token printed once
    assert (user_home / "pilot-home" / "journal" / "pilot.db").exists()


# --- the counts and claims the pages state, held to the code ------------------------------------------------


def test_getting_started_is_one_screen_above_the_reference() -> None:
    front = text("README.md")
    assert (
        front.index("## Getting started") < front.index("## How it works") < front.index("## Documentation")
    )
    started = section("README.md", "Getting started")
    assert len(started.strip().splitlines()) <= 50
    for step in (
        "./demo",
        "claude mcp add -s user pilot",
        "pilot console",
        "--exchange bybit-demo",
        "pilot doctor",
    ):
        assert step in started, step


def test_the_quick_start_is_two_commands_of_this_repository() -> None:
    """`./demo` (Pilot's main job on the paper exchange: `pilot demo`, which tests/demo plays) and `./test`
    (this suite), each a script of the repository that needs only Python 3.11+ to set itself up."""
    block = re.search(r"```bash\n(.*?)\n```", section("README.md", "Getting started"), re.DOTALL)
    assert block is not None
    assert [line.split()[0] for line in block.group(1).splitlines()] == ["./demo", "./test"]
    for script in ("demo", "test"):
        assert os.access(ROOT / script, os.X_OK) and "scripts/ensure-venv" in (ROOT / script).read_text()
    assert re.search(r'/pilot" demo "\$@"', (ROOT / "demo").read_text())


def test_the_tool_counts_are_the_tool_sets() -> None:
    from pilot.server.tool_sets import TOOL_SETS

    found = re.search(
        r"`all` \(the default\) (\d+) tools, `read` (\d+), `trade` (\d+)", text("connecting.md")
    )
    assert found is not None
    assert tuple(map(int, found.groups())) == tuple(len(TOOL_SETS[name]) for name in ("all", "read", "trade"))


def test_the_tools_table_names_every_tool_once() -> None:
    from pilot.server.tool_sets import TOOL_SETS

    rows = [line for line in text("tools.md").splitlines() if line.startswith("| `")]
    named = [name for row in rows for name in re.findall(r"`([a-z_]+)[` {]", row.split(" | ")[0])]
    assert sorted(named) == sorted(TOOL_SETS["all"])


def test_the_commands_table_lists_every_command() -> None:
    from pilot.cli import main

    rows = [line for line in text("commands.md").splitlines() if line.startswith("| `pilot ")]
    listed = {row.split("`")[1].split()[1] for row in rows}
    assert listed == set(main.list_commands(click.Context(main)))  # each imported when it runs


def test_the_demo_runs_pilot_inits_policy_with_the_one_line_the_install_page_names() -> None:
    from pilot.app.human.desk import DEFAULT_POLICY
    from pilot.demo.story import demo_policy

    added = {
        key: value for key, value in demo_policy().items() if json.loads(DEFAULT_POLICY).get(key) != value
    }
    assert f"`{json.dumps(added)[1:-1]}`" in " ".join(text("install.md").split())


def test_the_repositorys_policy_json_is_what_pilot_init_writes() -> None:
    from pilot.app.human.desk import DEFAULT_POLICY

    assert (ROOT / "policy.json").read_text(encoding="utf-8") == DEFAULT_POLICY


def test_the_http_server_and_the_console_default_to_different_ports() -> None:
    from pilot.cli.console import DEFAULT_PORT as CONSOLE
    from pilot.cli.serve import command as serve

    [port] = [option.default for option in serve.params if option.name == "port"]
    assert port != CONSOLE
    every_page = "\n".join(path.read_text(encoding="utf-8") for path in in_reading_order())
    shown = {int(p) for p in re.findall(r"pilot serve [^\n]*--transport http --port (\d+)", every_page)}
    assert shown and CONSOLE not in shown


def test_every_picture_the_pages_show_is_in_docs() -> None:
    pictures = [
        (path.parent / picture).resolve()
        for path in in_reading_order()
        for picture in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", path.read_text(encoding="utf-8"))
    ]
    assert pictures and all(picture.is_file() and picture.is_relative_to(DOCS) for picture in pictures)
    assert re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text("README.md"))  # the front page shows the console
    assert any("phone" in picture.name for picture in pictures)
    assert any("desktop" in picture.name for picture in pictures)


def test_troubleshooting_has_an_entry_for_each_symptom_new_users_met() -> None:
    headings = re.findall(r"^\*\*(.+?)\*\*", text("troubleshooting.md"), re.MULTILINE)
    symptoms = [
        "Failed to connect",  # a server that refuses to start, behind a client that hides why
        "in use by a running paper exchange",
        "Interactive OAuth requires a TTY",  # the Inspector's answer to a 401
        "pending_confirmation",  # where to approve
        "not what the agent asked",  # a quantity cut to the lot step
        "BTCUSD",  # a symbol not allowed
        "policy.json is invalid",
        "no positions",  # the console without an exchange to read
        "Telegram",
    ]
    for symptom in symptoms:
        assert any(symptom in heading for heading in headings), symptom


def test_every_code_going_live_can_refuse_with_has_an_entry_with_its_cause_and_fix() -> None:
    headings = re.findall(r"^\*\*(.+?)\*\*", section("troubleshooting.md", "Going live"), re.MULTILINE)
    going_live = [
        ErrorCode.PRACTICE_HOME,
        ErrorCode.LIVE_HOME_ONLY_BYBIT,
        ErrorCode.LIVE_HOME_ONLY_OKX,
        ErrorCode.NOT_A_TERMINAL,
        ErrorCode.LIVE_PHRASE_MISMATCH,
        ErrorCode.KILL_SWITCH_ON,
        ErrorCode.LIVE_LIMITS_MISSING,
        ErrorCode.LIVE_OFF,
        ErrorCode.DCP_NOT_SET,
        ErrorCode.CANCEL_AFTER_NOT_SET,
        ErrorCode.NO_KEY_STORED,
        ErrorCode.INVALID_KEY_INPUT,
        ErrorCode.KEY_PERMISSIONS_REJECTED,
        ErrorCode.KEY_PERMISSION_CHECK_FAILED,
        ErrorCode.KEY_UNKNOWN_ON_HOST,
        ErrorCode.KEY_WRONG_ENVIRONMENT,
        ErrorCode.KEY_IP_NOT_ALLOWED,
        ErrorCode.KEY_PASSPHRASE_WRONG,
        ErrorCode.KEY_INVALID,
        ErrorCode.KEY_SECRET_WRONG,
        "apiKeyPermissions",  # a growing order refused while serving: the rule, not an error code
        "unavailable",  # Pilot's own rate limiter: the family of a request not sent
    ]
    for code in going_live:
        assert any(f"`{code}`" in heading for heading in headings), code


# --- the front page and the links MkDocs cannot check -------------------------------------------------------


def test_the_readme_is_a_front_page_that_leads_to_every_page() -> None:
    front = text("README.md")
    assert len(front.splitlines()) <= 300
    linked = {target.split("#")[0] for target in re.findall(r"\]\(docs/([^)#]+)", front)}
    assert set(nav()) <= linked, set(nav()) - linked


def _anchors(path: Path) -> set[str]:
    from markdown.extensions.toc import slugify

    headings = re.findall(
        r"^#+ (.+)$", re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL), re.M
    )
    return {slugify(heading, "-") for heading in headings}


def test_every_link_of_the_readme_leads_to_a_file_and_a_heading_there() -> None:
    """MkDocs checks the pages' links in its strict build (./test); README.md is outside the site."""
    for target in re.findall(r"\]\(([^)\s]+)\)", text("README.md")):
        if target.startswith(("https://", "http://")):
            continue
        path, _, anchor = target.partition("#")
        linked = ROOT / path if path else README
        assert linked.exists(), target
        assert not anchor or anchor in _anchors(linked), target


def test_every_path_the_pages_name_is_in_the_repository() -> None:
    """Pages name the repository's files as code (MkDocs links only within docs/): each must be there, so a
    file moved or renamed takes its pages along. A placeholder (`pilot/cli/<command>.py`) names none."""
    named = re.compile(r"`((?:pilot|tests|scripts|benchmarks|docs|\.ci)/[^`\s<]*)`")
    for path in in_reading_order():
        for name in named.findall(path.read_text(encoding="utf-8")):
            module, _, _attribute = name.rpartition(".")  # pilot/app/human/kill_switch.stop_on_rollback
            assert list(ROOT.glob(name.rstrip("/"))) or (ROOT / f"{module}.py").is_file(), (path.name, name)
