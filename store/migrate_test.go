package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/migrations"
	"github.com/gpucal/gpucal/store/storetest"
)

// TestMigrateAgents checks that rows written before migration 4 (node
// agents) read back as they were: an unmanaged node without telemetry, a
// job without a checkpoint signal, a stop or runs.
func TestMigrateAgents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		dialect, driver, source := Postgres, "pgx", dsn
		now := "TIMESTAMPTZ '2030-01-07 09:00:00Z'"
		if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
			dialect, driver, source = SQLite, sqliteshim.ShimName, path
			now = "1894006800000"
		}
		ms, err := migrations.List(dialect)
		if err != nil {
			t.Fatal(err)
		}
		// The schema as it was at version 3, with a node and a job in it.
		raw, err := sql.Open(driver, source)
		if err != nil {
			t.Fatal(err)
		}
		stmts := []string{createMigrationsTable[dialect]}
		for _, m := range ms[:3] {
			stmts = append(stmts, m.SQL,
				"INSERT INTO schema_migrations (version, name, applied_at) VALUES ("+strconv.Itoa(m.Version)+", '"+m.Name+"', "+now+")")
		}
		stmts = append(stmts,
			"INSERT INTO users (name, created_at) VALUES ('alice', "+now+")",
			"INSERT INTO nodes (id, name, created_at) VALUES (1, 'a100-1', "+now+")",
			"INSERT INTO gpus (id, node_id, idx, name, memory_mib, uuid) VALUES (1, 1, 0, 'NVIDIA A100-SXM4-80GB', 81920, 'GPU-0')",
			`INSERT INTO jobs (id, owner, type, gpus, class, spec, state, submitted_at)
			 VALUES (1, 'alice', 'train', 1, 'normal', '{"command":["x"],"hints":{}}', 'queued', `+now+")",
		)
		for _, s := range stmts {
			if _, err := raw.ExecContext(ctx, s); err != nil {
				t.Fatalf("%.60s…: %v", s, err)
			}
		}
		raw.Close()

		db := open(t, dsn)
		var nodes []core.Node
		var job core.Job
		view(t, db, func(tx core.Tx) (err error) {
			if nodes, err = tx.Nodes(ctx); err != nil {
				return err
			}
			job, err = tx.Job(ctx, 1)
			return err
		})
		want := []core.Node{{ID: 1, Name: "a100-1", CreatedAt: t0, GPUs: []core.GPU{{ID: 1, NodeID: 1, Node: "a100-1",
			Name: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920, UUID: "GPU-0", State: core.GPUUp}}}}
		if diff := cmp.Diff(want, nodes); diff != "" {
			t.Errorf("Nodes after migrating (-want +got):\n%s", diff)
		}
		if job.Checkpoint != "" || job.Stop != nil || job.Runs != nil {
			t.Errorf("job after migrating has checkpoint %q, stop %+v, runs %+v; want none", job.Checkpoint, job.Stop, job.Runs)
		}
		if chunks, size, err := logOf(db, 1); err != nil || chunks != nil || size != 0 {
			t.Errorf("Log after migrating = %v, %d, %v; want an empty log", chunks, size, err)
		}
	})
}

func logOf(db *DB, job int64) (chunks []core.LogChunk, size int64, err error) {
	err = db.View(context.Background(), func(tx core.Tx) (err error) {
		chunks, size, err = tx.Log(context.Background(), job, 0, 100)
		return err
	})
	return chunks, size, err
}
