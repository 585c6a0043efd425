-- The channels a person wants each kind of notice on, as core.FormatVia
-- writes them ("*=slack;finished=email,slack"); '' for every channel they
-- can be reached on.
ALTER TABLE notify_prefs ADD COLUMN via TEXT NOT NULL DEFAULT '';
