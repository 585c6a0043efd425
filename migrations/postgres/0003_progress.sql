-- What a running job last reported about how far it is (core.Progress):
-- the share done, the steps when it reports steps, when the latest report
-- arrived (NULL: none yet) and the recent rate (share per second).
ALTER TABLE jobs
    ADD COLUMN progress_fraction DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (progress_fraction BETWEEN 0 AND 1),
    ADD COLUMN progress_step     BIGINT           NOT NULL DEFAULT 0 CHECK (progress_step >= 0),
    ADD COLUMN progress_total    BIGINT           NOT NULL DEFAULT 0 CHECK (progress_total >= 0),
    ADD COLUMN progress_at       TIMESTAMPTZ,
    ADD COLUMN progress_rate     DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (progress_rate >= 0);
