package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/gpucal/gpucal/core"
)

// ClaimKey claims rec.Key for rec.User before a request is handled, in one
// write transaction:
//
//   - no row: it stores rec as pending (status 0) and returns claimed;
//   - a pending row created before staleBefore (its request died): it takes
//     the row over with rec's fingerprint and time and returns claimed;
//   - otherwise it returns the stored row, not claimed: the request is done
//     (replay its response) or still running elsewhere.
//
// The returned record is the row as stored afterwards.
func (db *DB) ClaimKey(ctx context.Context, rec core.IdempotencyRecord, staleBefore time.Time) (existing core.IdempotencyRecord, claimed bool, err error) {
	err = db.write.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		row := keyRow{User: rec.User, Key: rec.Key, Fingerprint: rec.Fingerprint, CreatedAt: stamp(rec.CreatedAt)}
		res, err := tx.NewInsert().Model(&row).On("CONFLICT (user_name, key) DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 1 {
			claimed = true
		} else {
			// On PostgreSQL the WHERE is evaluated again on the newest row
			// after waiting for its lock, so of two takers only one wins.
			res, err := tx.NewUpdate().Model((*keyRow)(nil)).
				Set("fingerprint = ?", rec.Fingerprint).
				Set("created_at = ?", stamp(rec.CreatedAt)).
				Where("user_name = ? AND key = ?", rec.User, rec.Key).
				Where("status = 0 AND created_at < ?", stamp(staleBefore)).
				Exec(ctx)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			claimed = n == 1
		}
		var stored keyRow
		if err := tx.NewSelect().Model(&stored).Where("user_name = ? AND key = ?", rec.User, rec.Key).Scan(ctx); err != nil {
			return err
		}
		existing = stored.record()
		return nil
	})
	if err != nil {
		return core.IdempotencyRecord{}, false, dbError("claim idempotency key", err)
	}
	return existing, claimed, nil
}

// CompleteKey stores the response of the request that claimed key.
func (db *DB) CompleteKey(ctx context.Context, user, key string, status int, body []byte) error {
	res, err := db.write.NewUpdate().Model((*keyRow)(nil)).
		Set("status = ?", status).
		Set("body = ?", body).
		Where("user_name = ? AND key = ?", user, key).
		Exec(ctx)
	if err != nil {
		return dbError("complete idempotency key", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return dbError("complete idempotency key", err)
	} else if n == 0 {
		return notFound("idempotency key %q of %s", key, user)
	}
	return nil
}

// ReleaseKey forgets key, so that a retry is handled afresh; the handler
// calls it when the request failed in a way worth retrying (a 5xx).
func (db *DB) ReleaseKey(ctx context.Context, user, key string) error {
	_, err := db.write.NewDelete().Model((*keyRow)(nil)).Where("user_name = ? AND key = ?", user, key).Exec(ctx)
	return dbError("release idempotency key", err)
}

// PurgeKeys deletes the keys created before before and returns how many.
func (db *DB) PurgeKeys(ctx context.Context, before time.Time) (int64, error) {
	res, err := db.write.NewDelete().Model((*keyRow)(nil)).Where("created_at < ?", stamp(before)).Exec(ctx)
	if err != nil {
		return 0, dbError("purge idempotency keys", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, dbError("purge idempotency keys", err)
	}
	return n, nil
}
