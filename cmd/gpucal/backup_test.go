package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/web"
)

// TestBackup: a backup taken while the server runs holds what was booked,
// and a server started on the copy serves it; bad input changes nothing.
func TestBackup(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "gpucal.db")
	s := startServer(t, db)
	admin := s.client("t0")
	addNodes(t, admin, 1)
	ctx := context.Background()
	start := time.Now().Add(24 * time.Hour).Truncate(time.Hour).UTC()
	r, err := admin.Book(ctx, web.BookRequest{GPUs: 2, Start: start.Format(time.RFC3339), End: start.Add(2 * time.Hour).Format(time.RFC3339)}, "")
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "copy.db")
	backup := func(args ...string) (string, error) {
		out, err := exec.Command(binary, append([]string{"backup"}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := backup("--db", db, "--to", copyPath); err != nil || !strings.HasPrefix(out, "Backed up to "+copyPath) {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	if out, err := backup("--db", db, "--to", copyPath); err == nil || !strings.Contains(out, "exists already") {
		t.Errorf("a second backup over the first: %v\n%s", err, out)
	}
	if out, err := backup("--db", "postgres://x@localhost/gpucal"); err == nil || !strings.Contains(out, "pg_dump") {
		t.Errorf("a PostgreSQL database: %v\n%s", err, out)
	}
	s.kill()
	restored := startServer(t, "sqlite:"+copyPath)
	got, err := restored.client("t0").Reservation(ctx, r.ID)
	if err != nil || got.ID != r.ID || len(got.GPUs) != 2 {
		t.Errorf("the booking on the restored copy: %+v, %v", got, err)
	}
}
