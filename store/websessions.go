package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/gpucal/gpucal/core"
)

// webSessionRow is a sign-in link or browser session (migration 0016).
type webSessionRow struct {
	bun.BaseModel `bun:"table:web_sessions"`
	Hash          string `bun:"hash,pk"`
	Kind          string `bun:"kind"`
	User          string `bun:"user_name"`
	CreatedAt     stamp  `bun:"created_at"`
	ExpiresAt     stamp  `bun:"expires_at"`
	UsedAt        stamp  `bun:"used_at,nullzero"`
}

// InsertWebSession implements core.SessionTx.
func (t *tx) InsertWebSession(ctx context.Context, s core.WebSession) error {
	row := webSessionRow{Hash: s.Hash, Kind: string(s.Kind), User: s.User, CreatedAt: stamp(s.CreatedAt),
		ExpiresAt: stamp(s.ExpiresAt), UsedAt: stamp(s.UsedAt)}
	if _, err := t.db.NewInsert().Model(&row).Exec(ctx); err != nil {
		switch {
		case isUnique(err):
			return core.Errorf(core.CodeConflict, "that web session already exists")
		case isForeignKey(err):
			return notFound("user %s", s.User)
		}
		return dbError("insert web session", err)
	}
	return nil
}

// WebSession implements core.SessionTx.
func (t *tx) WebSession(ctx context.Context, hash string) (core.WebSession, error) {
	var row webSessionRow
	err := t.db.NewSelect().Model(&row).Where("hash = ?", hash).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return core.WebSession{}, core.Errorf(core.CodeNotFound, "web session not found")
	} else if err != nil {
		return core.WebSession{}, dbError("web session", err)
	}
	return core.WebSession{Hash: row.Hash, Kind: core.WebSessionKind(row.Kind), User: row.User,
		CreatedAt: row.CreatedAt.Time(), ExpiresAt: row.ExpiresAt.Time(), UsedAt: row.UsedAt.Time()}, nil
}

// UseWebSession implements core.SessionTx: the one UPDATE decides, so two
// browsers redeeming the same link at once get it once.
func (t *tx) UseWebSession(ctx context.Context, hash string, at time.Time) (bool, error) {
	res, err := t.db.NewUpdate().Model((*webSessionRow)(nil)).Set("used_at = ?", stamp(at)).
		Where("hash = ?", hash).Where("used_at IS NULL").Exec(ctx)
	if err != nil {
		return false, dbError("use web session", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, dbError("use web session", err)
	}
	return n == 1, nil
}

// DeleteWebSession implements core.SessionTx.
func (t *tx) DeleteWebSession(ctx context.Context, hash string) error {
	if _, err := t.db.NewDelete().Model((*webSessionRow)(nil)).Where("hash = ?", hash).Exec(ctx); err != nil {
		return dbError("delete web session", err)
	}
	return nil
}

// PruneWebSessions implements core.SessionTx.
func (t *tx) PruneWebSessions(ctx context.Context, before time.Time) (int64, error) {
	res, err := t.db.NewDelete().Model((*webSessionRow)(nil)).Where("expires_at < ?", stamp(before)).Exec(ctx)
	if err != nil {
		return 0, dbError("prune web sessions", err)
	}
	n, err := res.RowsAffected()
	return n, dbError("prune web sessions", err)
}
