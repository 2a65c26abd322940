"""Persistence: the only package that imports aiosqlite. One SQLite file per Pilot home."""

from pilot.store.canonical import canonical_hash, canonical_json, iso_utc, parse_iso
from pilot.store.confirmations import (
    ConfirmationRecord,
    Confirmations,
    ConfirmationStatus,
    new_confirmation_id,
)
from pilot.store.errors import DuplicateRecord, InvalidTransition, SchemaTooNew, StoreBusy, StoreError
from pilot.store.idempotency import Idempotency, IdempotencyBegin
from pilot.store.journal import GENESIS_HASH, ChainReport, Journal, JournalEntry
from pilot.store.plans import ClaimResult, PlanRecord, Plans, new_plan_id
from pilot.store.store import Store, open_store
from pilot.store.tokens import Tokens

__all__ = [
    "GENESIS_HASH",
    "ChainReport",
    "ClaimResult",
    "ConfirmationRecord",
    "ConfirmationStatus",
    "Confirmations",
    "DuplicateRecord",
    "Idempotency",
    "IdempotencyBegin",
    "InvalidTransition",
    "Journal",
    "JournalEntry",
    "PlanRecord",
    "Plans",
    "SchemaTooNew",
    "Store",
    "StoreBusy",
    "StoreError",
    "Tokens",
    "canonical_hash",
    "canonical_json",
    "iso_utc",
    "new_confirmation_id",
    "new_plan_id",
    "open_store",
    "parse_iso",
]
