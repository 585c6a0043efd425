-- What an event is about, as fields (JSON: job, start, was, reason, …), so
-- that a notification can be worded in the recipient's language and zone;
-- detail stays the English sentence. The language a chat person last used.
ALTER TABLE events ADD COLUMN data TEXT NOT NULL DEFAULT '';
ALTER TABLE chat_identities ADD COLUMN lang TEXT NOT NULL DEFAULT '';
