-- gpucal schema, SQLite flavour. Instants are INTEGER unix milliseconds (UTC)
-- so that comparisons are numeric; booleans are INTEGER 0/1.

CREATE TABLE users (
    name       TEXT    PRIMARY KEY,
    admin      INTEGER NOT NULL DEFAULT 0 CHECK (admin IN (0, 1)),
    created_at INTEGER NOT NULL
);

CREATE TABLE projects (
    name       TEXT    PRIMARY KEY,
    created_at INTEGER NOT NULL
);

CREATE TABLE project_members (
    project   TEXT NOT NULL REFERENCES projects (name),
    user_name TEXT NOT NULL REFERENCES users (name),
    role      TEXT NOT NULL CHECK (role IN ('member', 'admin')),
    PRIMARY KEY (project, user_name)
);
CREATE INDEX project_members_user ON project_members (user_name);

CREATE TABLE tokens (
    id         INTEGER PRIMARY KEY,
    user_name  TEXT    NOT NULL REFERENCES users (name),
    name       TEXT    NOT NULL DEFAULT '',
    hash       TEXT    NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
);
CREATE INDEX tokens_user ON tokens (user_name);

CREATE TABLE nodes (
    id         INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
);

CREATE TABLE gpus (
    id         INTEGER PRIMARY KEY,
    node_id    INTEGER NOT NULL REFERENCES nodes (id),
    idx        INTEGER NOT NULL CHECK (idx >= 0),
    name       TEXT    NOT NULL,
    memory_mib INTEGER NOT NULL DEFAULT 0,
    uuid       TEXT    NOT NULL UNIQUE,
    state      TEXT    NOT NULL DEFAULT 'up' CHECK (state IN ('up', 'down')),
    UNIQUE (node_id, idx)
);

-- AUTOINCREMENT: a reservation ID (r42) is public and must never be reused.
CREATE TABLE reservations (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    owner       TEXT    NOT NULL REFERENCES users (name),
    project     TEXT    REFERENCES projects (name),
    starts_at   INTEGER NOT NULL,
    ends_at     INTEGER NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('confirmed', 'cancelled', 'released', 'no_show')),
    model       TEXT    NOT NULL DEFAULT '',
    note        TEXT    NOT NULL DEFAULT '',
    request_key TEXT    NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    CHECK (ends_at > starts_at)
);
CREATE UNIQUE INDEX reservations_request_key ON reservations (owner, request_key) WHERE request_key <> '';
CREATE INDEX reservations_starts_at ON reservations (starts_at, id);
CREATE INDEX reservations_ends_at ON reservations (ends_at);
CREATE INDEX reservations_owner ON reservations (owner, starts_at);
CREATE INDEX reservations_project ON reservations (project, starts_at);

-- One row per GPU of a reservation, with the reservation's window copied so
-- that the overlap guard below needs no join. holds is 0 once cancelled.
CREATE TABLE reservation_gpus (
    reservation_id INTEGER NOT NULL REFERENCES reservations (id),
    gpu_id         INTEGER NOT NULL REFERENCES gpus (id),
    starts_at      INTEGER NOT NULL,
    ends_at        INTEGER NOT NULL,
    holds          INTEGER NOT NULL DEFAULT 1 CHECK (holds IN (0, 1)),
    PRIMARY KEY (reservation_id, gpu_id),
    CHECK (ends_at > starts_at)
);
-- Most slots are in the past: searching by end finds the few that may
-- still overlap a new or current window without reading the history.
CREATE INDEX reservation_gpus_gpu ON reservation_gpus (gpu_id, ends_at, starts_at) WHERE holds;
CREATE INDEX reservation_gpus_ends_at ON reservation_gpus (ends_at) WHERE holds;

-- SQLite has no exclusion constraints: these triggers refuse a holding row
-- that overlaps another holding row of the same GPU. Windows are half-open,
-- so back-to-back slots are allowed. Store.Update recognises the message.
CREATE TRIGGER reservation_gpus_no_overlap_insert
BEFORE INSERT ON reservation_gpus
WHEN NEW.holds
BEGIN
    SELECT RAISE(ABORT, 'gpucal: overlapping GPU slot')
    WHERE EXISTS (
        SELECT 1 FROM reservation_gpus AS o
        WHERE o.gpu_id = NEW.gpu_id AND o.holds
          AND o.starts_at < NEW.ends_at AND NEW.starts_at < o.ends_at
    );
END;

CREATE TRIGGER reservation_gpus_no_overlap_update
BEFORE UPDATE OF gpu_id, starts_at, ends_at, holds ON reservation_gpus
WHEN NEW.holds
BEGIN
    SELECT RAISE(ABORT, 'gpucal: overlapping GPU slot')
    WHERE EXISTS (
        SELECT 1 FROM reservation_gpus AS o
        WHERE o.gpu_id = NEW.gpu_id AND o.holds AND o.rowid <> OLD.rowid
          AND o.starts_at < NEW.ends_at AND NEW.starts_at < o.ends_at
    );
END;

CREATE TABLE audit (
    id     INTEGER PRIMARY KEY,
    at     INTEGER NOT NULL,
    actor  TEXT    NOT NULL,
    action TEXT    NOT NULL,
    object TEXT    NOT NULL DEFAULT '',
    detail TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX audit_at ON audit (at);
CREATE INDEX audit_actor ON audit (actor, at);
CREATE INDEX audit_object ON audit (object, at);

-- Responses of requests sent with an Idempotency-Key; status 0 is pending.
CREATE TABLE idempotency_keys (
    user_name   TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    status      INTEGER NOT NULL DEFAULT 0,
    body        BLOB,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (user_name, key)
);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
