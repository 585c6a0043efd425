-- Jobs, the GPUs they hold, and the outbox of plan events. SQLite flavour:
-- instants are INTEGER unix milliseconds (UTC), NULL where not yet known;
-- booleans are INTEGER 0/1; JSON is TEXT.

-- AUTOINCREMENT: a job ID (j42) is public and must never be reused.
CREATE TABLE jobs (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    owner          TEXT    NOT NULL REFERENCES users (name),
    project        TEXT    REFERENCES projects (name),
    name           TEXT    NOT NULL DEFAULT '',
    type           TEXT    NOT NULL CHECK (type IN ('train', 'finetune', 'eval', 'inference', 'notebook', 'other')),
    gpus           INTEGER NOT NULL CHECK (gpus > 0),
    model          TEXT    NOT NULL DEFAULT '',
    class          TEXT    NOT NULL CHECK (class IN ('reserved', 'high', 'normal', 'low')),
    preemptible    INTEGER NOT NULL DEFAULT 0 CHECK (preemptible IN (0, 1)),
    reservation_id INTEGER REFERENCES reservations (id),
    -- What the agent needs to run it and what the estimator reads:
    -- {"command": […], "env": {…}, "workdir": "…", "hints": {…}}.
    spec           TEXT    NOT NULL,
    state          TEXT    NOT NULL CHECK (state IN ('queued', 'starting', 'running', 'draining',
                                                     'succeeded', 'failed', 'preempted', 'cancelled')),
    submitted_at   INTEGER NOT NULL,
    started_at     INTEGER,
    ended_at       INTEGER,
    -- The latest plan's prediction (NULL planned_at: not planned yet).
    planned_at     INTEGER,
    position       INTEGER NOT NULL DEFAULT 0,
    start_p50      INTEGER,
    start_p90      INTEGER,
    end_p50        INTEGER,
    end_p90        INTEGER,
    planned_gpus   TEXT    NOT NULL DEFAULT '[]', -- JSON array of GPU IDs
    reason         TEXT    NOT NULL DEFAULT '',
    estimate       TEXT    NOT NULL DEFAULT '{}', -- JSON core.Estimate
    drain          TEXT                           -- JSON core.DrainOrder, or NULL
);
CREATE INDEX jobs_state ON jobs (state, id);
CREATE INDEX jobs_owner ON jobs (owner, id);
CREATE INDEX jobs_project ON jobs (project, id);
CREATE INDEX jobs_ended_at ON jobs (ended_at);

-- The GPUs a job was given when it started. holds is 1 while the job
-- holds them; the unique index makes the database refuse two holding jobs
-- on one GPU whatever the application does.
CREATE TABLE job_gpus (
    job_id INTEGER NOT NULL REFERENCES jobs (id),
    gpu_id INTEGER NOT NULL REFERENCES gpus (id),
    holds  INTEGER NOT NULL DEFAULT 1 CHECK (holds IN (0, 1)),
    PRIMARY KEY (job_id, gpu_id)
);
CREATE UNIQUE INDEX job_gpus_one_holder ON job_gpus (gpu_id) WHERE holds;

-- The transactional outbox: events are written in the same transaction as
-- the change that caused them; the notifier delivers them. A repeated
-- dedup_key is ignored.
CREATE TABLE events (
    id        INTEGER PRIMARY KEY,
    kind      TEXT    NOT NULL,
    job_id    INTEGER REFERENCES jobs (id),
    user_name TEXT    NOT NULL,
    at        INTEGER NOT NULL,
    detail    TEXT    NOT NULL DEFAULT '',
    dedup_key TEXT    NOT NULL UNIQUE
);
CREATE INDEX events_at ON events (at);
