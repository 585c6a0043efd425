-- People on chat platforms (Slack workspaces, Discord guilds) and the gpucal
-- user each one acts as, created on first use. tz is the zone replies use:
-- the platform's profile zone, or what the person set with /gpu tz.
CREATE TABLE chat_identities (
    platform    TEXT    NOT NULL,
    team        TEXT    NOT NULL,
    external_id TEXT    NOT NULL,
    user_name   TEXT    NOT NULL REFERENCES users (name),
    tz          TEXT    NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (platform, team, external_id)
);
CREATE INDEX chat_identities_user ON chat_identities (user_name);
