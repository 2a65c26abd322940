"""The client configs docs/connecting.md gives, held to each client's documented format and started for real.

Each snippet is read from the page as a user copies it: Claude Code's `claude mcp add` (user scope, so Pilot
is there in every folder: https://code.claude.com/docs/en/mcp#mcp-installation-scopes), Codex's
`config.toml` (`[mcp_servers.NAME]` with `command` and `args`: https://developers.openai.com/codex/mcp),
Cursor's and Claude Desktop's `mcpServers` (https://cursor.com/docs/mcp,
https://modelcontextprotocol.io/docs/develop/connect-local-servers) and VS Code's `servers`, whose stdio server
says `"type": "stdio"` (https://code.visualstudio.com/docs/copilot/reference/mcp-configuration). Every one
must start the same `pilot serve`, whose options `pilot serve` accepts; the paper one is started as a client
starts it and answers `tools/list` over stdio. Where Claude Code or Codex is installed (`npm install -g
@anthropic-ai/claude-code @openai/codex`; neither needs a login for this), their own `mcp add` runs too.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import click
import pytest
from mcp import Client, StdioServerParameters

from pilot.app.human.desk import init_home
from pilot.cli import main
from tests.pages import README, in_reading_order, text

PAGE = "connecting.md"
EXAMPLE_HOME = "/home/you/"  # what the JSON and TOML snippets write for the user's home directory
BLOCK = re.compile(r"```(toml|json|bash)\n(.*?)\n```", re.DOTALL)
ADD = re.compile(r"^claude mcp add .*$", re.MULTILINE)

Server = tuple[str, tuple[str, ...]]  # the command and its arguments, the home written as ~/


def blocks(language: str) -> list[str]:
    return [body for kind, body in BLOCK.findall(text(PAGE)) if kind == language]


def in_home(args: list[str]) -> tuple[str, ...]:
    return tuple(arg.replace(EXAMPLE_HOME, "~/") for arg in args)


def claude_code_servers() -> dict[str, Server]:
    """NAME -> (command, args) of each `claude mcp add [options] NAME -- COMMAND ARGS...` on the page."""
    servers = {}
    for line in ADD.findall(text(PAGE)):
        words = shlex.split(line.split("#")[0])
        name = words[words.index("--") - 1]
        command, *args = words[words.index("--") + 1 :]
        servers[name] = (command, tuple(args))
    return servers


def codex_servers() -> dict[str, Server]:
    servers = {}
    for block in blocks("toml"):
        for name, server in tomllib.loads(block)["mcp_servers"].items():
            assert set(server) == {"command", "args"}, server
            servers[name] = (server["command"], in_home(server["args"]))
    return servers


def json_servers(key: str) -> dict[str, Server]:
    """The servers under `key` (`mcpServers`: Cursor, Claude Desktop; `servers`: VS Code) of the page's JSON."""
    servers = {}
    for block in blocks("json"):
        for name, server in json.loads(block).get(key, {}).items():
            if key == "servers":
                assert server.pop("type") == "stdio", server  # VS Code's stdio server names its type
            assert set(server) == {"command", "args"}, server
            assert all(isinstance(arg, str) for arg in server["args"]), server
            servers[name] = (server["command"], in_home(server["args"]))
    return servers


def test_every_claude_code_command_registers_pilot_for_every_folder() -> None:
    # Claude Code's default (local) scope is the folder the command ran in only.
    commands = [line for path in in_reading_order() for line in ADD.findall(path.read_text("utf-8"))]
    assert len(commands) >= 4 and ADD.search(README.read_text("utf-8"))
    for line in commands:
        assert " -s user " in line or " --scope user " in line, line


def test_each_client_starts_the_same_pilot_serve() -> None:
    claude, codex = claude_code_servers(), codex_servers()
    cursor, vscode = json_servers("mcpServers"), json_servers("servers")

    assert set(claude) == set(codex) == set(cursor) == {"pilot", "pilot-demo"}
    assert set(vscode) == {"pilot"}
    for name, server in claude.items():
        assert codex[name] == cursor[name] == server, name
    assert vscode["pilot"] == claude["pilot"]
    assert claude["pilot"] == ("pilot", ("serve", "--home", "~/pilot-home"))
    assert "--exchange" in claude["pilot-demo"][1]


@pytest.mark.parametrize("name", ["pilot", "pilot-demo"])
def test_pilot_serve_takes_every_argument_the_configs_give(name: str) -> None:
    command, args = claude_code_servers()[name]
    assert command == "pilot" and args[0] == "serve"
    serve = main.get_command(click.Context(main), "serve")
    assert serve is not None
    serve.make_context("serve", list(args[1:]))  # raises click.UsageError on an option it does not take


@pytest.mark.anyio
async def test_the_paper_config_starts_pilot_which_answers_tools_list(user_home: Path) -> None:
    command, args = claude_code_servers()["pilot"]
    home = user_home / "pilot-home"
    await init_home(home)
    expanded = [arg.replace("~/", f"{user_home}/") for arg in args]
    server = StdioServerParameters(
        command=sys.executable, args=["-m", command, *expanded], cwd=str(user_home)
    )
    async with Client(server) as client:
        tools = await client.list_tools()
    assert {"plan_order", "place_order", "get_policy"} <= {tool.name for tool in tools.tools}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def installed(client: str) -> str:
    found = shutil.which(client)
    if found is None:
        pytest.skip(
            f"{client} is not installed here (npm install -g @anthropic-ai/claude-code @openai/codex)"
        )
    return found


def run(command: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_claude_code_sees_pilot_connected_in_another_folder(
    shell_env: dict[str, str], user_home: Path
) -> None:
    claude = installed("claude")
    run(["pilot", "init", "--home", str(user_home / "pilot-home")], shell_env, user_home)
    [line] = [line for line in ADD.findall(text(PAGE)) if " pilot -- " in line]
    first, elsewhere = user_home / "first", user_home / "elsewhere"
    first.mkdir()
    elsewhere.mkdir()
    run(["bash", "-c", line.replace("claude", shlex.quote(claude), 1)], shell_env, first)

    listed = run([claude, "mcp", "list"], shell_env, elsewhere)
    [pilot] = [row for row in listed.splitlines() if row.startswith("pilot:")]
    assert "Connected" in pilot, listed  # Claude Code started pilot serve and it answered


def test_codex_writes_the_config_the_page_shows(shell_env: dict[str, str], user_home: Path) -> None:
    codex = installed("codex")
    (user_home / ".codex").mkdir()  # Codex's home, CODEX_HOME's default
    add = f"{shlex.quote(codex)} mcp add pilot -- pilot serve --home ~/pilot-home"  # as the page says, in a shell
    run(["bash", "-c", add], shell_env, user_home)

    written = (user_home / ".codex" / "config.toml").read_text("utf-8")
    shown = blocks("toml")[0].replace(EXAMPLE_HOME, f"{user_home}/")
    assert tomllib.loads(written)["mcp_servers"] == tomllib.loads(shown)["mcp_servers"]
