-- Deliveries of outbox events: one row per event, recipient and channel
-- (slack, discord, …), delivered at least once by the notifier. dedup_key
-- is the event's key, the recipient and the channel: fanning an event out
-- twice adds nothing. A row is pending until a sender claims it (sending,
-- with a lease in claimed_until); then sent, with the provider's message
-- ID, or pending again at available_at after a failure, or dead after too
-- many. A sending row whose lease ran out was being sent when its sender
-- died: the next claim checks with the provider before sending again.
CREATE TABLE deliveries (
    id            INTEGER PRIMARY KEY,
    event_id      INTEGER NOT NULL REFERENCES events (id),
    user_name     TEXT    NOT NULL,
    channel       TEXT    NOT NULL,
    dedup_key     TEXT    NOT NULL UNIQUE,
    state         TEXT    NOT NULL CHECK (state IN ('pending', 'sending', 'sent', 'dead')),
    attempts      INTEGER NOT NULL DEFAULT 0,
    available_at  INTEGER NOT NULL,
    claimed_until INTEGER,
    last_error    TEXT    NOT NULL DEFAULT '',
    provider_id   TEXT    NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    sent_at       INTEGER
);
CREATE INDEX deliveries_due ON deliveries (state, available_at);
