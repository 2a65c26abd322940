"""Persistence: the only package that imports a database driver (aiosqlite, psycopg). A home's store is its
SQLite file, or a PostgreSQL database that several hosts share (pilot.store.database is the port)."""

from pilot.store.agents import AgentRecord, Agents
from pilot.store.anchor import HeadAnchor, Rollback
from pilot.store.canonical import canonical_hash, canonical_json, iso_utc, parse_iso
from pilot.store.chain import (
    GENESIS_HASH,
    STORE_MOVED,
    STORE_PLAN_REJECTED,
    STORE_REPAIRED,
    STORE_SEALED,
    Anchor,
    ChainReport,
)
from pilot.store.confirmations import (
    ConfirmationRecord,
    Confirmations,
    ConfirmationStatus,
    new_confirmation_id,
)
from pilot.store.errors import (
    DuplicateRecord,
    InvalidTransition,
    JournalKeyUnusable,
    SchemaTooNew,
    StoreBusy,
    StoreCorrupt,
    StoreError,
    StoreFull,
)
from pilot.store.guards import OpenReport
from pilot.store.idempotency import Idempotency, IdempotencyBegin
from pilot.store.journal import Journal, JournalEntry, Mark, Preempted, Unless
from pilot.store.leases import Leases
from pilot.store.location import StoreLocation
from pilot.store.monotonic import HostClock, Instant, StoreClock, age, holder_id
from pilot.store.plans import ClaimResult, PlanRecord, Plans, new_plan_id
from pilot.store.store import Store, open_store
from pilot.store.tokens import ACTING, Holder, Tokens, acting_actor, agent_of

__all__ = [
    "ACTING",
    "GENESIS_HASH",
    "STORE_MOVED",
    "STORE_PLAN_REJECTED",
    "STORE_REPAIRED",
    "STORE_SEALED",
    "AgentRecord",
    "Agents",
    "Anchor",
    "ChainReport",
    "ClaimResult",
    "ConfirmationRecord",
    "ConfirmationStatus",
    "Confirmations",
    "DuplicateRecord",
    "HeadAnchor",
    "Holder",
    "HostClock",
    "Idempotency",
    "IdempotencyBegin",
    "Instant",
    "InvalidTransition",
    "Journal",
    "JournalEntry",
    "JournalKeyUnusable",
    "Leases",
    "Mark",
    "OpenReport",
    "PlanRecord",
    "Plans",
    "Preempted",
    "Rollback",
    "SchemaTooNew",
    "Store",
    "StoreBusy",
    "StoreClock",
    "StoreCorrupt",
    "StoreError",
    "StoreFull",
    "StoreLocation",
    "Tokens",
    "Unless",
    "acting_actor",
    "age",
    "agent_of",
    "canonical_hash",
    "canonical_json",
    "holder_id",
    "iso_utc",
    "new_confirmation_id",
    "new_plan_id",
    "open_store",
    "parse_iso",
]
