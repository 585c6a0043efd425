-- Node agents (DESIGN §3): what each node's agent last reported, the
-- credential it authenticates with, the tokens that let agents join, the
-- stops gpucal decided and each job's parts on its nodes, and job logs.
-- SQLite flavour: instants are INTEGER unix milliseconds (UTC), NULL where
-- not yet known; JSON is TEXT.

-- state is core.NodeState: '' for a node an admin added by hand (no agent).
-- credential_hash is the hash of the node's credential, NULL before it
-- joined; SQLite cannot add a UNIQUE column, hence the index (NULLs are
-- distinct in it).
ALTER TABLE nodes ADD COLUMN state           TEXT NOT NULL DEFAULT '' CHECK (state IN ('', 'ready', 'suspect', 'down'));
ALTER TABLE nodes ADD COLUMN last_seen       INTEGER;
ALTER TABLE nodes ADD COLUMN agent           TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN nvml            TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN credential_hash TEXT;
CREATE UNIQUE INDEX nodes_credential_hash ON nodes (credential_hash);

-- fault, when not '', takes the GPU out of service until an admin clears
-- it. The rest is the agent's latest reading (core.Telemetry): telemetry_at
-- is when it arrived, NULL for never.
ALTER TABLE gpus ADD COLUMN fault        TEXT    NOT NULL DEFAULT '';
ALTER TABLE gpus ADD COLUMN util         REAL    NOT NULL DEFAULT 0;
ALTER TABLE gpus ADD COLUMN used_mib     INTEGER NOT NULL DEFAULT 0;
ALTER TABLE gpus ADD COLUMN temp_c       REAL    NOT NULL DEFAULT 0;
ALTER TABLE gpus ADD COLUMN power_w      REAL    NOT NULL DEFAULT 0;
ALTER TABLE gpus ADD COLUMN telemetry_at INTEGER;

-- stop: JSON core.StopRequest once gpucal decided to stop the running job,
-- else NULL. runs: JSON array of core.NodeRun, its parts as their agents
-- report them.
ALTER TABLE jobs ADD COLUMN stop TEXT;
ALTER TABLE jobs ADD COLUMN runs TEXT NOT NULL DEFAULT '[]';

-- Tokens that let an agent join until they expire; only the hash is kept.
CREATE TABLE join_tokens (
    hash       TEXT    PRIMARY KEY,
    created_by TEXT    NOT NULL REFERENCES users (name),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);

-- A job's log as its agent ships it, in chunks: n bytes from off, of which
-- the first length(data) were kept (a chunk whose bytes were dropped still
-- counts in the size). Chunks follow each other without gaps, so the size
-- is the end of the last one.
CREATE TABLE job_logs (
    job_id INTEGER NOT NULL REFERENCES jobs (id),
    off    INTEGER NOT NULL CHECK (off >= 0),
    n      INTEGER NOT NULL CHECK (n > 0),
    data   BLOB    NOT NULL,
    PRIMARY KEY (job_id, off),
    CHECK (n >= length(data))
);
