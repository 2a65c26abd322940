"""Granting a host's database role on a PostgreSQL store (pilot.store.postgres_schema.GRANTS)."""

from __future__ import annotations

from pilot.store.location import StoreLocation, postgres_engine


async def grant_host_role(location: StoreLocation, role: str) -> None:
    """Bring the schema up to date and grant `role` what a host needs, connected as the tables' owner.

    Raises:
        StoreError: the role name is not plain, or this connection may not grant.
    """
    assert location.url is not None
    postgres = postgres_engine()
    database = postgres.PostgresDatabase(location.url)
    try:
        await postgres.migrate(database)
        await postgres.grant(database, role)
    finally:
        await database.close()
