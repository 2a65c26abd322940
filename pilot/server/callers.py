"""Who calls: the named agent behind each tool call, and what its credential lets it call.

Over HTTP the agent is its bearer token's (pilot.server.http.BearerTokens names it in the request's scope);
over stdio it is the credential the client's configuration hands `pilot serve` (PILOT_AGENT_TOKEN, or
PILOT_AGENT_TOKEN_FILE naming a file that holds it: never on the command line, where every process could
read it). The credential is looked up again on every call, so `pilot agent revoke` stops it at once.

Every registered tool is wrapped once (`sdk.wrap_tools`): a revoked credential is refused every tool
(`agentRevoked`), a read-only one every tool that is not a read (`agentReadOnly`), each with nothing sent,
and the refusal journaled in the agent's name. The gate checks the role again for every write
(pilot.app.road.gate.role_violation), and the trading state holds a reduce-only agent to reducing
(pilot.app.runtime.runtime), so a use case that forgot the role still sends nothing it may not.
"""

from __future__ import annotations

import functools
import logging
import os
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from mcp.server.mcpserver import MCPServer

from pilot.app.answers import entry_kinds
from pilot.app.answers.refusals import agent_violation
from pilot.app.answers.responses import PlanAnswer, Refusal, ToolAnswer, next_out, violations_out
from pilot.app.answers.store_faults import StoreError
from pilot.app.facts.reads import ReadAnswer
from pilot.app.runtime.runtime import Holder, Runtime
from pilot.server import sdk
from pilot.server.tool_sets import READ

log = logging.getLogger("pilot.server")

TOKEN_VARIABLE = "PILOT_AGENT_TOKEN"
TOKEN_FILE_VARIABLE = "PILOT_AGENT_TOKEN_FILE"
HOLDER_STATE = "pilot.holder"  # the ASGI scope["state"] key under which the HTTP server names the agent


@dataclass(frozen=True, slots=True)
class Caller:
    """The agent behind a call: its credential's holder (None: no agent named), or `revoked` the name of an
    agent whose credential no longer holds."""

    holder: Holder | None = None
    revoked: str | None = None


CALLER: ContextVar[Caller | None] = ContextVar("pilot_caller", default=None)


class CredentialProblem(ValueError):
    """The stdio credential cannot be read: the message says which variable and the fix."""


def stdio_credential(environ: dict[str, str] | None = None) -> str | None:
    """The agent's credential the client's configuration gave `pilot serve` over stdio (None: none).

    Raises:
        CredentialProblem: the file PILOT_AGENT_TOKEN_FILE names cannot be read, or holds nothing.
    """
    env = os.environ if environ is None else environ
    token = env.get(TOKEN_VARIABLE, "").strip()
    if token:
        return token
    path = env.get(TOKEN_FILE_VARIABLE, "").strip()
    if not path:
        return None
    try:
        token = Path(path).expanduser().read_text(encoding="utf-8").strip()
    except OSError as error:
        raise CredentialProblem(
            f"{TOKEN_FILE_VARIABLE}={path} cannot be read ({error.strerror or error}): "
            "point it at the file `pilot agent add NAME --token-file FILE` wrote"
        ) from None
    if not token:
        raise CredentialProblem(f"{TOKEN_FILE_VARIABLE}={path} is empty: write the agent's credential in it")
    return token


async def caller_of(runtime: Runtime, request: object) -> Caller:
    """The agent behind a call that came in `request` (None over stdio): the HTTP scope's holder, or over
    stdio the credential `runtime.credential`, looked up now."""
    if request is not None:
        state = (getattr(request, "scope", None) or {}).get("state") or {}
        holder = state.get(HOLDER_STATE)
        return Caller(holder if isinstance(holder, Holder) else None)
    if runtime.credential is None:
        return Caller()
    try:
        holder = await runtime.store.tokens.identify(runtime.credential)
    except StoreError as error:  # cannot check it: refused, as an HTTP token is (pilot.server.http)
        log.warning("the agent's credential could not be checked, so the call was refused: %s", error)
        holder = None
    if holder is None:
        return Caller(revoked=runtime.credential_name or "unknown")
    runtime.credential_name = holder.name
    return Caller(holder)


def enforce_roles(mcp: MCPServer, runtime: Runtime) -> None:
    """Wrap every registered tool so a caller's credential is held to its role (module docstring)."""
    sdk.wrap_tools(mcp, lambda tool, fn: _held(tool, fn, runtime))


def _held(tool: sdk.ToolFacts, fn: sdk.ToolFunction, runtime: Runtime) -> sdk.ToolFunction:
    @functools.wraps(fn)
    async def held(*args: object, **kwargs: object) -> object:
        caller = CALLER.get() or Caller()
        refused = _refusal(caller, tool.name)
        if refused is None:
            return await fn(*args, **kwargs)
        await runtime.store.journal.append(
            entry_kinds.AGENT_REFUSED,
            {"tool": tool.name, "rule": refused.violations[0].rule.value, "agent": _name(caller)},
            now=runtime.now(),
        )
        return _answer(tool.answer_type, refused)

    return held


def _name(caller: Caller) -> str:
    return caller.holder.name if caller.holder is not None else str(caller.revoked)


def _refusal(caller: Caller, tool: str) -> Refusal | None:
    if caller.revoked is not None:
        violation = agent_violation(caller.revoked, None, tool)
    elif caller.holder is not None and caller.holder.role == "read" and tool not in READ:
        violation = agent_violation(caller.holder.name, "read", tool)
    else:
        return None
    return Refusal.of(violation, violation.detail)


def _answer(answer_type: object, refused: Refusal) -> ToolAnswer | PlanAnswer | ReadAnswer:
    if isinstance(answer_type, type) and issubclass(answer_type, ToolAnswer):
        return answer_type.from_refusal(refused)
    if answer_type is PlanAnswer:
        return PlanAnswer(
            status="refused",
            violations=violations_out(refused.violations),
            next_safe_action=next_out(refused.next_safe_action),
        )
    return ReadAnswer(status="refused", detail=refused.detail, violations=violations_out(refused.violations))
