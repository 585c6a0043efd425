-- A user's email address, for notifications by email: from their Slack
-- profile on first use, or set by themself or an admin. '' for none.
ALTER TABLE users ADD COLUMN email TEXT NOT NULL DEFAULT '';
