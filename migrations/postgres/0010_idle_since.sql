-- Since when a GPU's utilisation has stayed under the idle threshold, as
-- its agent's heartbeats show (NULL: busy, or never heard). The idle and
-- no-show alerts read it.
ALTER TABLE gpus ADD COLUMN idle_since TIMESTAMPTZ;
