-- Whether the notifier has turned an event into deliveries. A flag rather
-- than a cursor: on PostgreSQL events do not commit in ID order, and a
-- cursor would pass over one that committed late. The events written
-- before notifications were delivered are old news: marked done.
ALTER TABLE events ADD COLUMN fanned_out BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE events SET fanned_out = TRUE;
CREATE INDEX events_to_fan_out ON events (id) WHERE fanned_out = FALSE;
