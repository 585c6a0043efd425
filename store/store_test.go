package store

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/migrations"
	"github.com/gpucal/gpucal/store/storetest"
)

// t0 is a Monday morning, far enough ahead that no clock matters.
var t0 = time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC)

func hours(h float64) time.Time { return t0.Add(time.Duration(h * float64(time.Hour))) }

// testLogger sends the store's log lines to t.Log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// open opens dsn and closes it when t ends.
func open(t testing.TB, dsn string) *DB {
	t.Helper()
	db, err := Open(context.Background(), dsn, testLogger(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// update runs fn in db.Update and fails t on error.
func update(t testing.TB, db *DB, fn func(core.Tx) error) {
	t.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

// view runs fn in db.View and fails t on error.
func view(t testing.TB, db *DB, fn func(core.Tx) error) {
	t.Helper()
	if err := db.View(context.Background(), fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// wantCode checks that err carries code and, when msg is not empty, that
// message.
func wantCode(t testing.TB, err error, code core.Code, msg string) {
	t.Helper()
	if got := core.ErrorCode(err); got != code {
		t.Fatalf("error %v has code %q, want %q", err, got, code)
	}
	if got := core.ErrorMessage(err); msg != "" && got != msg {
		t.Errorf("error message %q, want %q", got, msg)
	}
}

// fixture is a small site: users alice and bob, project ml with alice as a
// member, node a100-1 with four GPUs and node h100-1 with two.
type fixture struct {
	db   *DB
	a100 core.Node
	h100 core.Node
}

func newFixture(t testing.TB, dsn string) *fixture {
	t.Helper()
	f := &fixture{db: open(t, dsn)}
	f.a100 = core.Node{Name: "a100-1", CreatedAt: t0}
	for i := range 4 {
		f.a100.GPUs = append(f.a100.GPUs, core.GPU{Index: i, Name: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920,
			UUID: "GPU-a100-" + string(rune('0'+i)), State: core.GPUUp})
	}
	f.h100 = core.Node{Name: "h100-1", CreatedAt: t0}
	for i := range 2 {
		f.h100.GPUs = append(f.h100.GPUs, core.GPU{Index: i, Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559,
			UUID: "GPU-h100-" + string(rune('0'+i)), State: core.GPUUp})
	}
	ctx := context.Background()
	update(t, f.db, func(tx core.Tx) error {
		for _, u := range []core.User{{Name: "alice", CreatedAt: t0}, {Name: "bob", Admin: true, CreatedAt: t0}} {
			if err := tx.InsertUser(ctx, u); err != nil {
				return err
			}
		}
		if err := tx.InsertProject(ctx, core.Project{Name: "ml", CreatedAt: t0}); err != nil {
			return err
		}
		if err := tx.SetMember(ctx, "ml", core.Member{User: "alice", Role: core.RoleMember}); err != nil {
			return err
		}
		if err := tx.InsertNode(ctx, &f.a100); err != nil {
			return err
		}
		return tx.InsertNode(ctx, &f.h100)
	})
	return f
}

// reservation returns a confirmed reservation of gpus by owner for [start, end).
func reservation(owner string, start, end time.Time, gpus ...core.GPU) core.Reservation {
	r := core.Reservation{Owner: owner, Start: start, End: end, State: core.Confirmed, CreatedAt: t0, UpdatedAt: t0}
	for _, g := range gpus {
		r.GPUs = append(r.GPUs, g.Ref())
	}
	return r
}

// book stores r and returns it with its ID.
func (f *fixture) book(t testing.TB, r core.Reservation) core.Reservation {
	t.Helper()
	update(t, f.db, func(tx core.Tx) error { return tx.InsertReservation(context.Background(), &r) })
	return r
}

func TestOpen(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		// Several replicas starting together, then a restart: every
		// migration is applied exactly once.
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				db, err := Open(ctx, dsn, testLogger(t))
				if err == nil {
					err = db.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("concurrent Open: %v", err)
		}
		db := open(t, dsn)
		var got []migrationRow
		if err := db.read.NewSelect().Model(&got).Order("version").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		ms, err := migrations.List(db.Dialect())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(ms) {
			t.Fatalf("schema_migrations has %d rows, want %d", len(got), len(ms))
		}
		for i, m := range ms {
			if got[i].Version != m.Version || got[i].Name != m.Name {
				t.Errorf("schema_migrations row %d = %d %s, want %d %s", i, got[i].Version, got[i].Name, m.Version, m.Name)
			}
		}
		if err := db.Ping(ctx); err != nil {
			t.Errorf("Ping: %v", err)
		}
		if want := map[bool]string{true: SQLite, false: Postgres}[strings.HasPrefix(dsn, "sqlite:")]; db.Dialect() != want {
			t.Errorf("Dialect() = %q, want %q", db.Dialect(), want)
		}
	})
}

func TestOpenDSN(t *testing.T) {
	dir := t.TempDir()
	for name, dsn := range map[string]string{
		"sqlite:":   "sqlite:" + dir + "/a/plain.db",
		"sqlite://": "sqlite://" + dir + "/b/slashes.db",
		"file:":     "file:" + dir + "/c/file.db",
	} {
		t.Run(name, func(t *testing.T) { open(t, dsn) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name, dsn string
		code      core.Code
	}{
		{"other database", "mysql://root@localhost/gpucal", core.CodeInternal},
		{"no scheme", "gpucal.db", core.CodeInternal},
		{"no path", "sqlite:", core.CodeInternal},
		{"in memory", "sqlite::memory:", core.CodeInternal},
		{"parameters", "sqlite:" + dir + "/x.db?_pragma=foo", core.CodeInternal},
		// Nothing listens on port 1: the database is unavailable.
		{"unreachable", "postgres://gpucal:secret@127.0.0.1:1/gpucal?sslmode=disable&connect_timeout=5", core.CodeUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := Open(ctx, tc.dsn, nil)
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded, want an error")
			}
			if got := core.ErrorCode(err); got != tc.code {
				t.Errorf("Open: %v: code %q, want %q", err, got, tc.code)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("Open: %v: the error shows the password", err)
			}
		})
	}
}

// TestTimes checks that instants round-trip exactly at millisecond
// precision, in UTC, and that range conditions compare them as instants.
func TestTimes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		east := time.FixedZone("UTC+14", 14*3600)
		for _, tc := range []struct {
			name string
			in   time.Time
			want time.Time
		}{
			{"whole second", t0, t0},
			{"milliseconds", t0.Add(123 * time.Millisecond), t0.Add(123 * time.Millisecond)},
			{"finer digits dropped", t0.Add(123456789 * time.Nanosecond), t0.Add(123 * time.Millisecond)},
			{"other zone", time.Date(2030, 1, 7, 23, 0, 0, 0, east), time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC)},
			{"before 1970", time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC), time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC)},
			{"far ahead", time.Date(2999, 12, 31, 23, 59, 59, 999e6, time.UTC), time.Date(2999, 12, 31, 23, 59, 59, 999e6, time.UTC)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				name := "u" + strings.ReplaceAll(strings.ToLower(tc.name), " ", "-")
				update(t, f.db, func(tx core.Tx) error { return tx.InsertUser(ctx, core.User{Name: name, CreatedAt: tc.in}) })
				var got core.User
				view(t, f.db, func(tx core.Tx) (err error) { got, err = tx.User(ctx, name); return err })
				if !got.CreatedAt.Equal(tc.want) || got.CreatedAt.Location() != time.UTC {
					t.Errorf("stored %v, read back %v, want %v", tc.in, got.CreatedAt, tc.want)
				}
			})
		}

		// A window given in another zone is the same instant: a slot from
		// 08:00+14:00 (18:00 UTC the day before) must sort and compare as UTC.
		g := f.a100.GPUs[0]
		early := f.book(t, reservation("alice", time.Date(2030, 1, 7, 8, 0, 0, 0, east), time.Date(2030, 1, 7, 10, 0, 0, 0, east), g))
		late := f.book(t, reservation("alice", hours(1), hours(2), g))
		for _, tc := range []struct {
			name     string
			from, to time.Time
			want     []int64
		}{
			{"both", hours(-20), hours(2), []int64{early.ID, late.ID}},
			{"ends exactly at from", hours(-13), hours(0), []int64{early.ID}},
			{"starts exactly at to", hours(0), hours(1), []int64{late.ID}},
			{"a millisecond apart", hours(-13).Add(time.Millisecond), hours(1).Add(-time.Millisecond), nil},
		} {
			t.Run("slots "+tc.name, func(t *testing.T) {
				var slots []core.Slot
				view(t, f.db, func(tx core.Tx) (err error) { slots, err = tx.Slots(ctx, tc.from, tc.to); return err })
				var got []int64
				for _, s := range slots {
					got = append(got, s.Reservation)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("Slots(%v, %v) (-want +got):\n%s", tc.from, tc.to, diff)
				}
			})
		}
	})
}

// TestUnavailable checks that a connection the server dropped is reported
// as CodeUnavailable, and that the pool recovers.
func TestUnavailable(t *testing.T) {
	db := open(t, storetest.Postgres(t))
	ctx := context.Background()
	_, err := db.write.ExecContext(ctx, "SELECT pg_terminate_backend(pg_backend_pid())")
	wantCode(t, dbError("terminate", err), core.CodeUnavailable, "the database is unavailable; try again later")
	if err := db.Ping(ctx); err != nil {
		t.Errorf("Ping after the connection was dropped: %v", err)
	}
}
