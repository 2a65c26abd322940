"""The console's routes: every URL and method with the module-level endpoint that answers it (each page's
endpoints are in its *_pages module), and the package's static files."""

from __future__ import annotations

from pathlib import Path

from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from pilot.console import (
    agent_pages,
    approval_pages,
    chart_pages,
    kill_switch_pages,
    live_pages,
    login_pages,
    overview_pages,
    policy_pages,
)

STATIC = Path(__file__).parent / "static"

ROUTES: list[BaseRoute] = [
    Route("/login", login_pages.login_form, methods=["GET"]),
    Route("/login", login_pages.login, methods=["POST"]),
    Route("/logout", login_pages.logout, methods=["POST"]),
    Route("/overview", overview_pages.overview_page, methods=["GET"]),
    Route("/", live_pages.live, methods=["GET"]),
    Route("/events", live_pages.events, methods=["GET"]),
    Route("/card/{card}", live_pages.card, methods=["GET"]),
    Route("/entry/{seq:int}", live_pages.entry, methods=["GET"]),
    Route("/approvals", approval_pages.approvals, methods=["GET"]),
    Route("/approvals/{confirmation_id}", approval_pages.approval, methods=["GET"]),
    Route("/approvals/{confirmation_id}", approval_pages.approvals_decide, methods=["POST"]),
    Route("/kill-switch", kill_switch_pages.kill_switch, methods=["GET"]),
    Route("/kill-switch", kill_switch_pages.kill_switch_set, methods=["POST"]),
    Route("/agents", agent_pages.agents, methods=["GET"]),
    Route("/agents/{name}/switch", agent_pages.agent_switch, methods=["POST"]),
    Route("/policy", policy_pages.policy, methods=["GET"]),
    Route("/policy/edit", policy_pages.policy_edit_form, methods=["GET"]),
    Route("/policy/edit", policy_pages.policy_edit, methods=["POST"]),
    Route("/charts", chart_pages.charts_page, methods=["GET"]),
    Mount("/static", StaticFiles(directory=STATIC), name="static"),
]
