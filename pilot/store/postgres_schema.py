"""The PostgreSQL schema: the same tables and columns as SQLite's (pilot.store.schema), guarded by the database.

The journal is insert-only by the database itself twice over: triggers refuse an update, a delete, a truncate,
an entry that does not take the next seq or carries no seal, whoever asks; and the hosts' own role is granted
no UPDATE, DELETE or TRUNCATE on it at all (`grants`, given by `pilot store grant`), so only the tables' owner
could even drop a trigger. Plans only move forward and keep their content, and the journal key record is
fixed, by the same means. Every open checks the triggers and their function (`GUARDS`, `FUNCTIONS`) and
restores what was dropped, disabled or altered (pilot.store.postgres.restore_guards).

The store's clock in statements is the server's (`pilot_boot()`, `pilot_micros()`): microseconds since the
server started, by its clock, one clock for every host. A holder of a lease or a claim is judged alive by its
session (`pilot_session()`, a session-bound advisory lock each connection takes: `pilot_session_gone`).
"""

from __future__ import annotations

# The server's clock: which start of the server (a restart is a new boot, as a reboot is for a machine), and
# microseconds since it by the server's clock.
SERVER_BOOT = "'pg@' || (extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint::text"
SERVER_MICROS = "((extract(epoch FROM clock_timestamp()) - extract(epoch FROM pg_postmaster_start_time())) * 1000000)::bigint"

# v1 holds what SQLite's schema holds at its v4, with a session beside each holder and the exchange keys
# (SQLite keeps them in keys.db).
_V1 = """
CREATE TABLE journal (
    seq BIGINT PRIMARY KEY,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    actor TEXT NOT NULL,
    plan_id TEXT NULL,
    data TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    seal TEXT NULL,
    boot TEXT NULL,
    micros BIGINT NULL
);
CREATE INDEX journal_by_kind ON journal (kind, at);
CREATE INDEX journal_by_plan ON journal (plan_id) WHERE plan_id IS NOT NULL;

CREATE TABLE plans (
    plan_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('open', 'claimed', 'done')),
    order_json TEXT NULL,
    snapshot_json TEXT NULL,
    payload_json TEXT NOT NULL,
    claimed_at TEXT NULL,
    outcome_json TEXT NULL,
    outcome_at TEXT NULL,
    seal TEXT NULL,
    boot TEXT NULL,
    expires_micros BIGINT NULL,
    claimed_by TEXT NULL,
    claimed_micros BIGINT NULL,
    claimed_session TEXT NULL
);
CREATE INDEX plans_unfinished ON plans (claimed_at) WHERE status = 'claimed' AND outcome_json IS NULL;

CREATE TABLE idempotency (
    key TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    args_hash TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'done')),
    response_json TEXT NULL,
    created_at TEXT NOT NULL,
    completed_at TEXT NULL
);

CREATE TABLE confirmations (
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
    result_at TEXT NULL,
    boot TEXT NULL,
    expires_micros BIGINT NULL
);

CREATE TABLE tokens (
    name TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);

CREATE TABLE journal_key (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    key_id TEXT NOT NULL,
    recorded_at TEXT NOT NULL
);

CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    acquired_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    boot TEXT NULL,
    expires_micros BIGINT NULL,
    session TEXT NULL
);

CREATE TABLE exchange_keys (
    key_id        TEXT PRIMARY KEY,
    environment   TEXT NOT NULL,
    base_url      TEXT,
    key_hint      TEXT NOT NULL,
    sealed        BYTEA,
    added_at      TEXT NOT NULL,
    checked_at    TEXT NOT NULL,
    read_only     INTEGER NOT NULL,
    permissions   TEXT NOT NULL,
    disallowed    TEXT NOT NULL,
    ip_bound      INTEGER NOT NULL,
    retired_at    TEXT
);
CREATE UNIQUE INDEX one_active_key_per_environment ON exchange_keys (environment) WHERE retired_at IS NULL;

CREATE OR REPLACE FUNCTION pilot_boot() RETURNS text LANGUAGE sql STABLE AS $$
    SELECT {boot}
$$;
CREATE OR REPLACE FUNCTION pilot_micros() RETURNS bigint LANGUAGE sql VOLATILE AS $$
    SELECT {micros}
$$;
CREATE OR REPLACE FUNCTION pilot_session() RETURNS text LANGUAGE sql STABLE AS $$
    SELECT COALESCE(NULLIF(current_setting('pilot.session', true), ''), 'none')
$$;
CREATE OR REPLACE FUNCTION pilot_session_gone(session text) RETURNS boolean LANGUAGE sql VOLATILE AS $$
    SELECT session IS NULL OR NOT EXISTS (
        SELECT 1 FROM pg_locks
        WHERE locktype = 'advisory' AND objsubid = 2 AND granted
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND classid::text || ':' || objid::text = session)
$$;
"""

# v2: agents' heartbeats, for the dead-man's switch (pilot.store.agents; SQLite's v5), with the session beside
# each holder, so a process on any host is judged gone when its session ends. The host roles already granted
# the leases (`pilot store grant`, before this table was) get the same rights on it, so hosts keep serving
# once the owner has opened the store at this version.
_V2 = """
CREATE TABLE agents (
    holder TEXT PRIMARY KEY,
    last_call_at TEXT NULL,
    boot TEXT NULL,
    call_micros BIGINT NULL,
    sessions INTEGER NOT NULL DEFAULT 0,
    seen_at TEXT NOT NULL,
    session TEXT NULL
);
DO $$
DECLARE host_role text;
BEGIN
    FOR host_role IN SELECT DISTINCT grantee FROM information_schema.role_table_grants
        WHERE table_schema = current_schema() AND table_name = 'leases' AND privilege_type = 'DELETE'
            AND grantee <> current_user
    LOOP
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON agents TO %I', host_role);
    END LOOP;
END
$$;
"""

# The guards' functions: one that refuses with its trigger's message, and the journal's next-seq rule (a
# conflict, so the writer that lost a race for a seq reads the head again, as after a duplicate key).
FUNCTIONS: dict[str, str] = {
    "pilot_refuse": """CREATE OR REPLACE FUNCTION pilot_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING MESSAGE = TG_ARGV[0], ERRCODE = 'restrict_violation';
END
$$""",
    "pilot_journal_next_seq": """CREATE OR REPLACE FUNCTION pilot_journal_next_seq() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.seq IS DISTINCT FROM (SELECT COALESCE(MAX(seq), 0) + 1 FROM journal) THEN
        RAISE EXCEPTION USING MESSAGE = 'journal entries must take the next seq', ERRCODE = 'unique_violation';
    END IF;
    RETURN NEW;
END
$$""",
}


def _refuse(name: str, when: str, table: str, message: str, condition: str = "", each: str = "ROW") -> str:
    where = f" WHEN ({condition})" if condition else ""
    return (
        f"CREATE TRIGGER {name} {when} ON {table} FOR EACH {each}{where}"
        f" EXECUTE FUNCTION pilot_refuse('{message}')"
    )


_APPEND_ONLY = "journal is append-only"
_KEY_FIXED = "the journal key record is fixed"
_PLANS_KEPT = "plans are kept: a plan is never deleted"

# Each guard as PostgreSQL itself prints it back (pg_get_triggerdef, the table's schema left out), so an open
# compares what is there with what should be, and a trigger recreated with another condition is found.
GUARDS: dict[str, str] = {
    "journal_no_update": _refuse("journal_no_update", "BEFORE UPDATE", "journal", _APPEND_ONLY),
    "journal_no_delete": _refuse("journal_no_delete", "BEFORE DELETE", "journal", _APPEND_ONLY),
    "journal_no_truncate": _refuse(
        "journal_no_truncate", "BEFORE TRUNCATE", "journal", _APPEND_ONLY, each="STATEMENT"
    ),
    "journal_next_seq_only": "CREATE TRIGGER journal_next_seq_only BEFORE INSERT ON journal FOR EACH ROW"
    " EXECUTE FUNCTION pilot_journal_next_seq()",
    "journal_sealed_only": _refuse(
        "journal_sealed_only",
        "BEFORE INSERT",
        "journal",
        "journal entries must carry a seal",
        "(new.seal IS NULL)",
    ),
    # open -> claimed -> done, and done may only take a newer outcome: a used plan never reopens.
    "plans_forward_only": _refuse(
        "plans_forward_only",
        "BEFORE UPDATE",
        "plans",
        "a plan only moves forward: open, claimed, done",
        "(NOT (((old.status = 'open'::text) AND (new.status = 'claimed'::text))"
        " OR ((old.status = ANY (ARRAY['claimed'::text, 'done'::text])) AND (new.status = 'done'::text))))",
    ),
    "plans_fixed_at_creation": _refuse(
        "plans_fixed_at_creation",
        "BEFORE UPDATE",
        "plans",
        "a plan is fixed when it is created",
        "((new.plan_id IS DISTINCT FROM old.plan_id) OR (new.created_at IS DISTINCT FROM old.created_at)"
        " OR (new.expires_at IS DISTINCT FROM old.expires_at) OR (new.payload_json IS DISTINCT FROM old.payload_json)"
        " OR (new.order_json IS DISTINCT FROM old.order_json) OR (new.snapshot_json IS DISTINCT FROM old.snapshot_json)"
        " OR (new.seal IS DISTINCT FROM old.seal) OR (new.boot IS DISTINCT FROM old.boot)"
        " OR (new.expires_micros IS DISTINCT FROM old.expires_micros)"
        " OR ((old.claimed_at IS NOT NULL) AND (new.claimed_at IS DISTINCT FROM old.claimed_at))"
        " OR ((old.claimed_by IS NOT NULL) AND (new.claimed_by IS DISTINCT FROM old.claimed_by))"
        " OR ((old.claimed_micros IS NOT NULL) AND (new.claimed_micros IS DISTINCT FROM old.claimed_micros))"
        " OR ((old.claimed_session IS NOT NULL) AND (new.claimed_session IS DISTINCT FROM old.claimed_session)))",
    ),
    "plans_no_delete": _refuse("plans_no_delete", "BEFORE DELETE", "plans", _PLANS_KEPT),
    "plans_no_truncate": _refuse(
        "plans_no_truncate", "BEFORE TRUNCATE", "plans", _PLANS_KEPT, each="STATEMENT"
    ),
    "journal_key_no_update": _refuse("journal_key_no_update", "BEFORE UPDATE", "journal_key", _KEY_FIXED),
    "journal_key_no_delete": _refuse("journal_key_no_delete", "BEFORE DELETE", "journal_key", _KEY_FIXED),
    "journal_key_no_truncate": _refuse(
        "journal_key_no_truncate", "BEFORE TRUNCATE", "journal_key", _KEY_FIXED, each="STATEMENT"
    ),
}
GUARDED_TABLES = ("journal", "plans", "journal_key")

MIGRATIONS: tuple[str, ...] = (
    "\n".join(
        [
            _V1.replace("{boot}", SERVER_BOOT).replace("{micros}", SERVER_MICROS),
            *(sql + ";" for sql in FUNCTIONS.values()),
            *(sql + ";" for sql in GUARDS.values()),
        ]
    ),
    _V2,
    # v3: an agent's credential is a token with a role (pilot.store.tokens); older tokens keep NULL.
    "ALTER TABLE tokens ADD COLUMN IF NOT EXISTS role TEXT NULL;",
)
SCHEMA_VERSION = len(MIGRATIONS)

# What a host's role may do (`pilot store grant`): read everything; append to the journal and never change it;
# create, claim and finish plans and never delete one; read the journal key record (written at the first open,
# by the owner); everything on the tables whose rows come and go.
GRANTS: tuple[tuple[str, str], ...] = (
    ("SELECT, INSERT", "journal"),
    ("SELECT, INSERT, UPDATE", "plans"),
    ("SELECT", "journal_key"),
    ("SELECT", "schema_version"),
    ("SELECT, INSERT, UPDATE, DELETE", "idempotency"),
    ("SELECT, INSERT, UPDATE, DELETE", "confirmations"),
    ("SELECT, INSERT, UPDATE, DELETE", "tokens"),
    ("SELECT, INSERT, UPDATE, DELETE", "leases"),
    ("SELECT, INSERT, UPDATE, DELETE", "exchange_keys"),
    ("SELECT, INSERT, UPDATE, DELETE", "agents"),
)
