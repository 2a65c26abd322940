"""The database role the hosts use on a PostgreSQL store: granted what serving needs, and no power over the past."""

from __future__ import annotations

from pathlib import Path

from pilot.app.human.desk import HumanError
from pilot.app.runtime.runtime import Home
from pilot.core.errors import ErrorCode
from pilot.store.roles import grant_host_role


class NotOnServer(HumanError):
    """A command for a PostgreSQL store was run on a home whose store is its SQLite file."""

    code = ErrorCode.NOT_ON_A_SERVER


async def grant_role(home: Path, role: str) -> str:
    """Grant `role` a host's privileges on the home's PostgreSQL store; return the store (no password).

    Raises:
        NotOnServer: the home's store is its SQLite file.
        StoreError: the role name is not plain, or this connection may not grant (not the tables' owner).
    """
    location = Home(home).store()
    if location.url is None:
        raise NotOnServer(
            "the home's store is its SQLite file; roles are a PostgreSQL store's",
            "give --store postgresql://OWNER@HOST/DB, or move the home first (`pilot store move`)",
        )
    await grant_host_role(location, role)
    return str(location)
