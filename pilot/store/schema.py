"""The database schema as numbered migrations; `MIGRATIONS[n - 1]` brings version n - 1 to n.

`TRIGGERS` is the one list of the guards every open checks (pilot.store.guards): a trigger added to the
schema belongs there, or the check would not restore it.
"""

from __future__ import annotations

_V1 = """
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    actor TEXT NOT NULL,
    plan_id TEXT NULL,
    data TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_by_kind ON journal (kind, at);
CREATE INDEX IF NOT EXISTS journal_by_plan ON journal (plan_id) WHERE plan_id IS NOT NULL;
CREATE TRIGGER IF NOT EXISTS journal_no_update BEFORE UPDATE ON journal
BEGIN SELECT RAISE(ABORT, 'journal is append-only'); END;
CREATE TRIGGER IF NOT EXISTS journal_no_delete BEFORE DELETE ON journal
BEGIN SELECT RAISE(ABORT, 'journal is append-only'); END;
-- Every insert must take the next seq: no gaps, and no INSERT OR REPLACE over an existing row.
CREATE TRIGGER IF NOT EXISTS journal_next_seq_only BEFORE INSERT ON journal
WHEN NEW.seq IS NOT (SELECT COALESCE(MAX(seq), 0) + 1 FROM journal)
BEGIN SELECT RAISE(ABORT, 'journal entries must take the next seq'); END;

CREATE TABLE IF NOT EXISTS plans (
    plan_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('open', 'claimed', 'done')),
    order_json TEXT NULL,
    snapshot_json TEXT NULL,
    payload_json TEXT NOT NULL,
    claimed_at TEXT NULL,
    outcome_json TEXT NULL,
    outcome_at TEXT NULL
);

CREATE TABLE IF NOT EXISTS idempotency (
    key TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    args_hash TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'done')),
    response_json TEXT NULL,
    created_at TEXT NOT NULL,
    completed_at TEXT NULL
);

CREATE TABLE IF NOT EXISTS confirmations (
    confirmation_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN
        ('pending', 'approved', 'rejected', 'cancelled', 'expired', 'executing', 'executed')),
    tool TEXT NOT NULL,
    action_json TEXT NOT NULL,
    summary TEXT NOT NULL,
    decided_by TEXT NULL,
    decided_at TEXT NULL,
    claimed_at TEXT NULL,
    result_json TEXT NULL,
    result_at TEXT NULL
);

CREATE TABLE IF NOT EXISTS tokens (
    name TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
"""

_V1_TRIGGERS = ("journal_no_update", "journal_no_delete", "journal_next_seq_only")

# The append-only guards, as SQLite keeps them in `sqlite_master.sql` (v1 created the first three).
TRIGGERS: dict[str, str] = {
    "journal_no_update": """CREATE TRIGGER journal_no_update BEFORE UPDATE ON journal
BEGIN SELECT RAISE(ABORT, 'journal is append-only'); END""",
    "journal_no_delete": """CREATE TRIGGER journal_no_delete BEFORE DELETE ON journal
BEGIN SELECT RAISE(ABORT, 'journal is append-only'); END""",
    "journal_next_seq_only": """CREATE TRIGGER journal_next_seq_only BEFORE INSERT ON journal
WHEN NEW.seq IS NOT (SELECT COALESCE(MAX(seq), 0) + 1 FROM journal)
BEGIN SELECT RAISE(ABORT, 'journal entries must take the next seq'); END""",
    "journal_sealed_only": """CREATE TRIGGER journal_sealed_only BEFORE INSERT ON journal
WHEN NEW.seal IS NULL
BEGIN SELECT RAISE(ABORT, 'journal entries must carry a seal'); END""",
    # open -> claimed -> done, and done may only take a newer outcome: a used plan never reopens.
    "plans_forward_only": """CREATE TRIGGER plans_forward_only BEFORE UPDATE ON plans
WHEN NOT ((OLD.status = 'open' AND NEW.status = 'claimed')
    OR (OLD.status IN ('claimed', 'done') AND NEW.status = 'done'))
BEGIN SELECT RAISE(ABORT, 'a plan only moves forward: open, claimed, done'); END""",
    "plans_fixed_at_creation": """CREATE TRIGGER plans_fixed_at_creation BEFORE UPDATE ON plans
WHEN NEW.plan_id IS NOT OLD.plan_id OR NEW.created_at IS NOT OLD.created_at
    OR NEW.expires_at IS NOT OLD.expires_at OR NEW.payload_json IS NOT OLD.payload_json
    OR NEW.order_json IS NOT OLD.order_json OR NEW.snapshot_json IS NOT OLD.snapshot_json
    OR NEW.seal IS NOT OLD.seal OR NEW.boot IS NOT OLD.boot OR NEW.expires_micros IS NOT OLD.expires_micros
    OR (OLD.claimed_at IS NOT NULL AND NEW.claimed_at IS NOT OLD.claimed_at)
    OR (OLD.claimed_by IS NOT NULL AND NEW.claimed_by IS NOT OLD.claimed_by)
    OR (OLD.claimed_micros IS NOT NULL AND NEW.claimed_micros IS NOT OLD.claimed_micros)
BEGIN SELECT RAISE(ABORT, 'a plan is fixed when it is created'); END""",
    "plans_no_delete": """CREATE TRIGGER plans_no_delete BEFORE DELETE ON plans
BEGIN SELECT RAISE(ABORT, 'plans are kept: a plan is never deleted'); END""",
    # INSERT OR REPLACE deletes without firing delete triggers; refusing the insert closes that door.
    # The message says UNIQUE so a plain duplicate still reads as one (pilot.store.errors).
    "plans_never_replaced": """CREATE TRIGGER plans_never_replaced BEFORE INSERT ON plans
WHEN EXISTS (SELECT 1 FROM plans WHERE plan_id = NEW.plan_id)
BEGIN SELECT RAISE(ABORT, 'UNIQUE plan ids: a plan is never replaced'); END""",
    "journal_key_no_update": """CREATE TRIGGER journal_key_no_update BEFORE UPDATE ON journal_key
BEGIN SELECT RAISE(ABORT, 'the journal key record is fixed'); END""",
    "journal_key_no_delete": """CREATE TRIGGER journal_key_no_delete BEFORE DELETE ON journal_key
BEGIN SELECT RAISE(ABORT, 'the journal key record is fixed'); END""",
    "journal_key_once": """CREATE TRIGGER journal_key_once BEFORE INSERT ON journal_key
WHEN EXISTS (SELECT 1 FROM journal_key)
BEGIN SELECT RAISE(ABORT, 'the journal key record is fixed'); END""",
}

# v2 wrote this guard before plans had a clock (v4 replaces it with the one in TRIGGERS).
_V2_PLANS_FIXED = """CREATE TRIGGER plans_fixed_at_creation BEFORE UPDATE ON plans
WHEN NEW.plan_id IS NOT OLD.plan_id OR NEW.created_at IS NOT OLD.created_at
    OR NEW.expires_at IS NOT OLD.expires_at OR NEW.payload_json IS NOT OLD.payload_json
    OR NEW.order_json IS NOT OLD.order_json OR NEW.snapshot_json IS NOT OLD.snapshot_json
    OR NEW.seal IS NOT OLD.seal
    OR (OLD.claimed_at IS NOT NULL AND NEW.claimed_at IS NOT OLD.claimed_at)
BEGIN SELECT RAISE(ABORT, 'a plan is fixed when it is created'); END"""

# v2: seals. Entries and plans written before it keep a NULL seal (see pilot.store.guards for how the
# journal's are adopted); journal_key records which key seals this database.
_V2 = "\n".join(
    [
        "ALTER TABLE journal ADD COLUMN seal TEXT NULL;",
        "ALTER TABLE plans ADD COLUMN seal TEXT NULL;",
        "CREATE TABLE journal_key (id INTEGER PRIMARY KEY CHECK (id = 1), key_id TEXT NOT NULL,"
        " recorded_at TEXT NOT NULL);",
        *(
            _V2_PLANS_FIXED + ";" if name == "plans_fixed_at_creation" else sql + ";"
            for name, sql in TRIGGERS.items()
            if name not in _V1_TRIGGERS
        ),
    ]
)

# v3: leases. A lease is a lock every process that opens the database respects, with an expiry so that a
# holder that crashed cannot block the others for ever (pilot.store.leases).
_V3 = """
CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    acquired_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
"""

# v4: the store's clock (pilot.store.monotonic). Journal entries carry its reading beside the wall time; plans
# and confirmations live and leases expire on it; a claim says who made it, so a plan whose claimer is gone is released at once.
# Rows written before keep NULLs: an entry without a reading is dated by its wall time, a plan without one
# can no longer be claimed (plan it again), a lease without one is free.
_V4 = "\n".join(
    [
        "ALTER TABLE journal ADD COLUMN boot TEXT NULL;",
        "ALTER TABLE journal ADD COLUMN micros INTEGER NULL;",
        "ALTER TABLE plans ADD COLUMN boot TEXT NULL;",
        "ALTER TABLE plans ADD COLUMN expires_micros INTEGER NULL;",
        "ALTER TABLE plans ADD COLUMN claimed_by TEXT NULL;",
        "ALTER TABLE plans ADD COLUMN claimed_micros INTEGER NULL;",
        "ALTER TABLE confirmations ADD COLUMN boot TEXT NULL;",
        "ALTER TABLE confirmations ADD COLUMN expires_micros INTEGER NULL;",
        "ALTER TABLE leases ADD COLUMN boot TEXT NULL;",
        "ALTER TABLE leases ADD COLUMN expires_micros INTEGER NULL;",
        "DROP TRIGGER IF EXISTS plans_fixed_at_creation;",
        TRIGGERS["plans_fixed_at_creation"] + ";",
    ]
)

# v5: agents' heartbeats, for the dead-man's switch (pilot.store.agents): one row per serving process, its
# agent's last call on the store's clock (and the wall time, for people reading the table).
_V5 = """
CREATE TABLE agents (
    holder TEXT PRIMARY KEY,
    last_call_at TEXT NULL,
    boot TEXT NULL,
    call_micros INTEGER NULL,
    sessions INTEGER NOT NULL DEFAULT 0,
    seen_at TEXT NOT NULL
);
"""

# v6: an agent's credential is a token with a role (pilot.store.tokens: read, reduce, trade); a token issued
# before, or by `pilot token issue`, keeps NULL: a client with no agent's name, as before.
_V6 = "ALTER TABLE tokens ADD COLUMN role TEXT NULL;"

# v7: the plans a use stopped in (claimed, no outcome) found without reading every plan ever made: upkeep
# asks on every tick (pilot.store.plans.unfinished), and a long session makes thousands. The same partial
# index the PostgreSQL schema has.
_V7 = (
    "CREATE INDEX IF NOT EXISTS plans_unfinished ON plans (claimed_at) "
    "WHERE status = 'claimed' AND outcome_json IS NULL;"
)

MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3, _V4, _V5, _V6, _V7)
SCHEMA_VERSION = len(MIGRATIONS)
