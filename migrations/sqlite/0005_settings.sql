-- Site-wide values the server keeps for itself, by name: the key that signs
-- job tokens (core: jobTokenKey). Written once, never changed.
CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
