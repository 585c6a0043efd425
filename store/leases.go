package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/gpucal/gpucal/core"
)

type leaseRow struct {
	bun.BaseModel `bun:"table:leases"`
	Name          string `bun:"name,pk"`
	Holder        string `bun:"holder"`
	Term          int64  `bun:"term"`
	ExpiresAt     stamp  `bun:"expires_at"`
}

// ClaimLease implements core.Tx. The one statement decides: two replicas
// claiming at once are serialised on the row, and the second sees the
// first's lease.
func (t *tx) ClaimLease(ctx context.Context, name, holder string, now, until time.Time) (core.Lease, error) {
	_, err := t.db.NewRaw(`INSERT INTO leases (name, holder, term, expires_at) VALUES (?, ?, 1, ?)
ON CONFLICT (name) DO UPDATE SET
    term = CASE WHEN leases.holder = EXCLUDED.holder THEN leases.term ELSE leases.term + 1 END,
    holder = EXCLUDED.holder,
    expires_at = EXCLUDED.expires_at
WHERE leases.holder = EXCLUDED.holder OR leases.expires_at <= ?`, name, holder, stamp(until), stamp(now)).Exec(ctx)
	if err != nil {
		return core.Lease{}, dbError("claim lease "+name, err)
	}
	var row leaseRow
	if err := t.db.NewSelect().Model(&row).Where("name = ?", name).Scan(ctx); err != nil {
		return core.Lease{}, dbError("read lease "+name, err)
	}
	return core.Lease{Name: row.Name, Holder: row.Holder, Term: row.Term, Expires: row.ExpiresAt.Time()}, nil
}

// ReleaseLease implements core.Tx.
func (t *tx) ReleaseLease(ctx context.Context, name, holder string, now time.Time) error {
	_, err := t.db.NewUpdate().Model((*leaseRow)(nil)).Set("expires_at = ?", stamp(now)).
		Where("name = ?", name).Where("holder = ?", holder).Where("expires_at > ?", stamp(now)).Exec(ctx)
	if err != nil {
		return dbError("release lease "+name, err)
	}
	return nil
}
