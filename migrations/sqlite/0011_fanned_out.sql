-- Whether the notifier has turned an event into deliveries. A flag rather
-- than a cursor: on PostgreSQL events do not commit in ID order, and a
-- cursor would pass over one that committed late. The events written
-- before notifications were delivered are old news: marked done.
ALTER TABLE events ADD COLUMN fanned_out INTEGER NOT NULL DEFAULT 0 CHECK (fanned_out IN (0, 1));
UPDATE events SET fanned_out = 1;
CREATE INDEX events_to_fan_out ON events (id) WHERE fanned_out = 0;
