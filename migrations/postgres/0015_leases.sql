-- Named leases, held by one server replica at a time until expires_at
-- (the leader's lease is "leader"). A holder renews its lease well before
-- it expires; another replica takes it only once it has. term counts the
-- holders: it grows by one each time the lease changes hands.
CREATE TABLE leases (
    name       TEXT   PRIMARY KEY,
    holder     TEXT   NOT NULL,
    term       BIGINT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
