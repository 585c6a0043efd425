-- What a person wants to hear about: event kinds they muted (comma-
-- separated) and quiet hours in their zone, minutes after midnight
-- [quiet_from, quiet_to), both -1 for none. Notices that fall in quiet
-- hours wait for their end; muted kinds are not sent at all.
CREATE TABLE notify_prefs (
    user_name  TEXT    PRIMARY KEY REFERENCES users (name),
    muted      TEXT    NOT NULL DEFAULT '',
    quiet_from INTEGER NOT NULL DEFAULT -1,
    quiet_to   INTEGER NOT NULL DEFAULT -1,
    tz         TEXT    NOT NULL DEFAULT 'UTC'
);
