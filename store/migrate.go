package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/gpucal/gpucal/migrations"
)

// migrationLock is the PostgreSQL advisory lock key that serialises
// migrations across processes: "gpucal" in ASCII.
const migrationLock int64 = 0x67707563616c

// createMigrationsTable is the bookkeeping table; it is created before the
// migrations themselves, in the dialect's types.
var createMigrationsTable = map[string]string{
	SQLite: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`,
	Postgres: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)`,
}

// migrate applies the migrations the database lacks, each in its own
// transaction, so that several processes starting together apply each one
// exactly once:
//
//   - PostgreSQL: a session-level advisory lock, held on one pinned
//     connection for the whole run. It dies with the connection, so a
//     crashed process leaves no stale lock behind.
//   - SQLite: every transaction of the writer pool is BEGIN IMMEDIATE, so
//     each "is version N applied? apply it" runs under the write lock.
func (db *DB) migrate(ctx context.Context) (err error) {
	ms, err := migrations.List(db.dialect)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	conn, err := db.write.Conn(ctx)
	if err != nil {
		return dbError("migrate", err)
	}
	defer conn.Close()
	if db.dialect == Postgres {
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(?)", migrationLock); err != nil {
			return dbError("migrate: lock", err)
		}
		defer func() {
			if _, uerr := conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(?)", migrationLock); uerr != nil {
				// Drop the connection rather than pool one that still holds the lock.
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			}
		}()
	}
	if err := inTx(ctx, conn, func(tx bun.Tx) error {
		_, err := tx.ExecContext(ctx, createMigrationsTable[db.dialect])
		return err
	}); err != nil {
		return dbError("migrate: create schema_migrations", err)
	}
	for _, m := range ms {
		applied := false
		err := inTx(ctx, conn, func(tx bun.Tx) error {
			done, err := tx.NewSelect().Model((*migrationRow)(nil)).Where("version = ?", m.Version).Exists(ctx)
			if err != nil || done {
				return err
			}
			// The file goes to the driver as it is: bun would read '?' in it as a placeholder.
			if _, err := tx.Tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			applied = true
			_, err = tx.NewInsert().Model(&migrationRow{Version: m.Version, Name: m.Name, AppliedAt: stamp(time.Now())}).Exec(ctx)
			return err
		})
		if err != nil {
			return dbError(fmt.Sprintf("migrate: %04d_%s", m.Version, m.Name), err)
		}
		if applied {
			db.logger.InfoContext(ctx, "applied migration", "version", m.Version, "name", m.Name)
		}
	}
	var newest int
	if err := conn.NewSelect().Model((*migrationRow)(nil)).ColumnExpr("COALESCE(MAX(version), 0)").Scan(ctx, &newest); err != nil {
		return dbError("migrate: read version", err)
	}
	if latest := ms[len(ms)-1].Version; newest > latest {
		// A rollback of the binary: the schema only ever grows, so an older
		// gpucal usually still works. Say so rather than refuse to start.
		db.logger.WarnContext(ctx, "the database schema is newer than this gpucal", "schema_version", newest, "known_version", latest)
	}
	return nil
}

// inTx runs fn in a transaction on conn.
func inTx(ctx context.Context, conn bun.Conn, fn func(bun.Tx) error) error {
	return conn.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return fn(tx) })
}
