"""The database schema as numbered migrations; `MIGRATIONS[n - 1]` brings version n - 1 to n."""

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

MIGRATIONS: tuple[str, ...] = (_V1,)
SCHEMA_VERSION = len(MIGRATIONS)
