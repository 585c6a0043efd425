package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/gpucal/gpucal/core"
)

// InsertJoinToken stores jt. A hash already there is refused with a
// CodeConflict error, an unknown creator with CodeNotFound.
func (t *tx) InsertJoinToken(ctx context.Context, jt core.JoinToken) error {
	row := joinTokenRow{Hash: jt.Hash, CreatedBy: jt.CreatedBy, CreatedAt: stamp(jt.CreatedAt), ExpiresAt: stamp(jt.ExpiresAt)}
	if _, err := t.db.NewInsert().Model(&row).Exec(ctx); err != nil {
		switch {
		case isUnique(err):
			return core.Errorf(core.CodeConflict, "that join token already exists")
		case isForeignKey(err):
			return notFound("user %s", jt.CreatedBy)
		}
		return dbError("insert join token", err)
	}
	return nil
}

// JoinToken returns the join token with this hash, expired or not: the
// caller compares ExpiresAt with its own clock.
func (t *tx) JoinToken(ctx context.Context, hash string) (core.JoinToken, error) {
	var row joinTokenRow
	if err := t.db.NewSelect().Model(&row).Where("hash = ?", hash).Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return core.JoinToken{}, core.Errorf(core.CodeNotFound, "join token not found")
	} else if err != nil {
		return core.JoinToken{}, dbError("join token", err)
	}
	return core.JoinToken{Hash: row.Hash, CreatedBy: row.CreatedBy, CreatedAt: row.CreatedAt.Time(), ExpiresAt: row.ExpiresAt.Time()}, nil
}

// PruneJoinTokens implements core.Tx.
func (t *tx) PruneJoinTokens(ctx context.Context, expiredBefore time.Time) (int64, error) {
	res, err := t.db.NewDelete().TableExpr("join_tokens").Where("expires_at < ?", stamp(expiredBefore)).Exec(ctx)
	if err != nil {
		return 0, dbError("prune join tokens", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
