-- Web sign-in: one-time sign-in links (kind 'link', used_at set once
-- redeemed) and browser sessions (kind 'session'), by the SHA-256 of their
-- token; the plain tokens are never stored.
CREATE TABLE web_sessions (
    hash       TEXT    PRIMARY KEY,
    kind       TEXT    NOT NULL CHECK (kind IN ('link', 'session')),
    user_name  TEXT    NOT NULL REFERENCES users (name),
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at    TIMESTAMPTZ
);
CREATE INDEX web_sessions_expires ON web_sessions (expires_at);
