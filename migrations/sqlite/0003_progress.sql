-- What a running job last reported about how far it is (core.Progress):
-- the share done, the steps when it reports steps, when the latest report
-- arrived (NULL: none yet, unix milliseconds) and the recent rate (share
-- per second).
ALTER TABLE jobs ADD COLUMN progress_fraction REAL    NOT NULL DEFAULT 0 CHECK (progress_fraction BETWEEN 0 AND 1);
ALTER TABLE jobs ADD COLUMN progress_step     INTEGER NOT NULL DEFAULT 0 CHECK (progress_step >= 0);
ALTER TABLE jobs ADD COLUMN progress_total    INTEGER NOT NULL DEFAULT 0 CHECK (progress_total >= 0);
ALTER TABLE jobs ADD COLUMN progress_at       INTEGER;
ALTER TABLE jobs ADD COLUMN progress_rate     REAL    NOT NULL DEFAULT 0 CHECK (progress_rate >= 0);
