// Package store is the bun implementation of core.Store on SQLite and
// PostgreSQL. It is the only package that imports bun or a database driver
// (storetest aside); everything else talks to core.Store.
//
// The database itself refuses double booking: an exclusion constraint on
// PostgreSQL and triggers on SQLite guard reservation_gpus, so even a bug in
// core's checks cannot put two holding reservations on one GPU at once.
// Instants are TIMESTAMPTZ on PostgreSQL and unix milliseconds on SQLite.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/gpucal/gpucal/core"
)

// Dialect names, as Dialect returns them.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// DB is a gpucal database. It implements core.Store.
type DB struct {
	dialect string
	write   *bun.DB // Update and the idempotency keys; also View on PostgreSQL
	read    *bun.DB // View; on PostgreSQL the same as write
	logger  *slog.Logger
}

var _ core.Store = (*DB)(nil)

// sqlitePragmas are set on every SQLite connection.
//
// synchronous(FULL): with WAL, NORMAL already survives a killed process,
// but a power loss or kernel crash may drop the last commits. A booking
// that was acknowledged must not vanish, and bookings are rare enough that
// one fsync per commit costs nothing noticeable, so FULL.
const sqlitePragmas = "_pragma=busy_timeout(30000)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)"

// Open connects to the database named by dsn, applies the migrations it
// lacks and returns it. dsn is "sqlite:PATH" (also "sqlite://PATH" and
// "file:PATH") or a "postgres://…" / "postgresql://…" URL. logger may be
// nil.
func Open(ctx context.Context, dsn string, logger *slog.Logger) (*DB, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var (
		db  *DB
		err error
	)
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		db, err = openPostgres(dsn)
	case strings.HasPrefix(dsn, "sqlite:"), strings.HasPrefix(dsn, "file:"):
		db, err = openSQLite(dsn)
	default:
		return nil, fmt.Errorf("store: database %q: want sqlite:PATH or postgres://…", redact(dsn))
	}
	if err != nil {
		return nil, err
	}
	db.logger = logger.With("dialect", db.dialect)
	if err := db.firstPing(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// openSQLite opens two pools on one file. Writers share a single connection
// whose transactions all BEGIN IMMEDIATE: they take the write lock up front
// and queue in database/sql rather than spinning on SQLITE_BUSY, and a
// check-then-insert inside one is race-free. Readers use their own pool of
// deferred, query-only connections; in WAL mode they never wait for a writer.
func openSQLite(dsn string) (*DB, error) {
	path := dsn
	for _, prefix := range []string{"sqlite://", "sqlite:", "file://", "file:"} {
		if strings.HasPrefix(path, prefix) {
			path = strings.TrimPrefix(path, prefix)
			break
		}
	}
	switch {
	case path == "":
		return nil, fmt.Errorf("store: database %q names no file", dsn)
	case path == ":memory:" || strings.Contains(path, "mode=memory"):
		return nil, fmt.Errorf("store: in-memory SQLite is not supported; name a file")
	case strings.ContainsAny(path, "?#"):
		return nil, fmt.Errorf("store: database %q: SQLite paths may not contain '?' or '#'; gpucal sets the connection parameters itself", dsn)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	// A plain path (no file: prefix): the driver strips the parameters and
	// SQLite does no URI decoding of the name.
	wdb, err := sql.Open(sqliteshim.ShimName, path+"?"+sqlitePragmas+"&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	wdb.SetMaxOpenConns(1)
	rdb, err := sql.Open(sqliteshim.ShimName, path+"?"+sqlitePragmas+"&_pragma=query_only(1)")
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	rdb.SetMaxOpenConns(n)
	rdb.SetMaxIdleConns(n)
	return &DB{
		dialect: SQLite,
		write:   bun.NewDB(wdb, sqlitedialect.New()),
		read:    bun.NewDB(rdb, sqlitedialect.New()),
	}, nil
}

// openPostgres opens one pool through pgx. bun writes every value into the
// SQL text, so queries carry no parameters; the "exec" mode runs each in
// one round trip instead of preparing and caching every distinct text.
func openPostgres(dsn string) (*DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: database %s: %w", redact(dsn), err)
	}
	if !strings.Contains(dsn, "default_query_exec_mode") {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	sqldb := stdlib.OpenDB(*cfg)
	sqldb.SetMaxOpenConns(20)
	sqldb.SetMaxIdleConns(20)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	db := bun.NewDB(sqldb, pgdialect.New())
	return &DB{dialect: Postgres, write: db, read: db}, nil
}

// redact hides the password of a URL-style DSN for error messages.
func redact(dsn string) string {
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		return dsn
	}
	userinfo, host, ok := strings.Cut(rest, "@")
	if !ok || strings.Contains(userinfo, "/") {
		return dsn
	}
	if user, _, hasPass := strings.Cut(userinfo, ":"); hasPass {
		return scheme + "://" + user + ":xxxxx@" + host
	}
	return dsn
}

// Close closes the connection pools.
func (db *DB) Close() error {
	err := db.write.Close()
	if db.read != db.write {
		err = errors.Join(err, db.read.Close())
	}
	return err
}

// Dialect returns "sqlite" or "postgres".
func (db *DB) Dialect() string { return db.dialect }

// firstPing is Ping when the database is opened. On SQLite, several
// processes opening one file together can meet SQLITE_BUSY while a
// connection switches the file to WAL (SQLite does not call the busy
// handler there), so a busy first ping is tried again for up to ten
// seconds.
func (db *DB) firstPing(ctx context.Context) error {
	wait := 20 * time.Millisecond
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := db.Ping(ctx)
		if err == nil || db.dialect != SQLite || sqliteCode(err)&sqlitePrimaryMask != sqliteBusy || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// Ping checks that the database answers, for readiness probes. Its error
// has code core.CodeUnavailable.
func (db *DB) Ping(ctx context.Context) error {
	for _, b := range []*bun.DB{db.write, db.read} {
		if err := b.PingContext(ctx); err != nil {
			return unavailable("ping", err)
		}
	}
	return nil
}

// View runs fn in a read-only transaction that sees one snapshot. On SQLite
// it uses the reader pool and never takes the write lock.
func (db *DB) View(ctx context.Context, fn func(core.Tx) error) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if db.dialect == Postgres {
		opts.Isolation = sql.LevelRepeatableRead // read-only: never fails to serialize
	}
	var fnErr error
	err := db.read.RunInTx(ctx, opts, func(ctx context.Context, btx bun.Tx) error {
		fnErr = fn(&tx{db: btx})
		return fnErr
	})
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil:
		return dbError("view", err)
	}
	return nil
}

// Update retry policy: a transaction that lost a race runs again at most
// maxAttempts times in all, after a short, jittered, growing pause.
const (
	maxAttempts = 5
	retryPause  = 5 * time.Millisecond
)

// Update runs fn in a read-write transaction and commits when fn returns
// nil. When the database refuses the transaction because a concurrent one
// won (an overlapping GPU slot, a serialization failure, a deadlock), fn
// runs again on the new state; after maxAttempts it returns a CodeConflict
// error. Errors of fn otherwise come back unchanged.
func (db *DB) Update(ctx context.Context, fn func(core.Tx) error) error {
	for attempt := 1; ; attempt++ {
		var fnErr error
		err := db.write.RunInTx(ctx, nil, func(ctx context.Context, btx bun.Tx) error {
			fnErr = fn(&tx{db: btx, forUpdate: db.dialect == Postgres})
			return fnErr
		})
		if err == nil {
			return nil
		}
		if !lostRace(err) {
			if fnErr != nil {
				return fnErr
			}
			return dbError("transaction", err)
		}
		if attempt == maxAttempts {
			return fmt.Errorf("%w: store: gave up after %d attempts: %w",
				core.Errorf(core.CodeConflict, "the GPUs were taken by a concurrent booking; try again"), attempt, err)
		}
		db.logger.DebugContext(ctx, "transaction lost a race; retrying", "attempt", attempt, "err", err)
		pause := retryPause << (attempt - 1)
		pause += rand.N(pause)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("store: update: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// tx implements core.Tx on a bun transaction or database.
type tx struct {
	db bun.IDB
	// forUpdate locks the rows that Reservation reads until the end of the
	// transaction (PostgreSQL; SQLite writers are serialised anyway), so
	// that two concurrent changes of one reservation happen one after the
	// other.
	forUpdate bool
}

var _ core.Tx = (*tx)(nil)

func (t *tx) sqlite() bool { return t.db.Dialect().Name() == dialect.SQLite }

// Backup writes a consistent copy of a SQLite database to path (which
// must not exist), while the server goes on: VACUUM INTO reads one
// snapshot, as any reader does, and writes a compact database file that
// can replace the original to restore. PostgreSQL has pg_dump for this.
func (db *DB) Backup(ctx context.Context, path string) error {
	if db.dialect != SQLite {
		return core.Errorf(core.CodeInvalid, "gpucal backup copies SQLite databases; back PostgreSQL up with pg_dump")
	}
	if _, err := os.Stat(path); err == nil {
		return core.Errorf(core.CodeConflict, "%s exists already; a backup never overwrites a file", path)
	}
	if _, err := db.write.ExecContext(ctx, "VACUUM INTO ?", path); err != nil { // the readers are read-only connections
		return dbError("backup", err)
	}
	return nil
}
