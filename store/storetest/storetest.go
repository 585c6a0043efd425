// Package storetest gives tests a fresh, empty gpucal database on SQLite
// and on PostgreSQL. Any package's tests may import it; non-test code must
// not.
//
// PostgreSQL tests need GPUCAL_TEST_POSTGRES, a postgres:// URL of a role
// that may create databases; scripts/test.sh (make test) starts a
// throwaway server and sets it. Without it they are skipped.
//
// It returns DSNs rather than opened stores so that it does not import
// store, whose own tests use it.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
)

// EnvPostgres names the environment variable with the PostgreSQL admin URL.
const EnvPostgres = "GPUCAL_TEST_POSTGRES"

// SQLite returns the DSN of a fresh SQLite database in t.TempDir().
func SQLite(t testing.TB) string {
	t.Helper()
	return "sqlite:" + filepath.Join(t.TempDir(), "gpucal.db")
}

// Postgres creates an empty database on the server named by
// GPUCAL_TEST_POSTGRES, returns its DSN and drops it when t ends. It skips
// t when the variable is not set.
func Postgres(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(EnvPostgres)
	if admin == "" {
		t.Skip(EnvPostgres + " not set; run make test to start a throwaway PostgreSQL")
	}
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// URL, got %q", EnvPostgres, admin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	defer db.Close()
	b := make([]byte, 6)
	rand.Read(b)
	name := "gpucal_test_" + hex.EncodeToString(b)
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("storetest: create database %s: %v", name, err)
	}
	t.Cleanup(func() { drop(t, admin, name) })
	u.Path = "/" + name
	return u.String()
}

// drop removes database name, first ending whatever is still connected.
func drop(t testing.TB, admin, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Errorf("storetest: drop %s: %v", name, err)
		return
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx,
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
		t.Errorf("storetest: drop %s: %v", name, err)
	}
	if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("storetest: drop %s: %v", name, err)
	}
}

// Each runs f as one subtest per database, "sqlite" and "postgres", each
// with the DSN of a fresh database. The postgres subtest skips when
// GPUCAL_TEST_POSTGRES is not set.
func Each(t *testing.T, f func(t *testing.T, dsn string)) {
	t.Helper()
	for _, db := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", SQLite}, {"postgres", Postgres}} {
		t.Run(db.name, func(t *testing.T) { f(t, db.dsn(t)) })
	}
}
