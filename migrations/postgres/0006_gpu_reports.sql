-- What each GPU's agent last reported about its faults (core.Telemetry):
-- the critical XID it last named (0 for none) and the fault it found
-- itself ('' for none). A GPU is taken out of service when these change
-- to something new, so that an admin who clears a fault is not overruled
-- by the agent repeating the one it already reported.
ALTER TABLE gpus ADD COLUMN last_xid    BIGINT  NOT NULL DEFAULT 0 CHECK (last_xid >= 0);
ALTER TABLE gpus ADD COLUMN agent_fault TEXT    NOT NULL DEFAULT '';
